#include "config/run_params.h"

#include "config/param_table.h"

namespace moehub {
namespace {

ParamTable<RunParams> run_table() {
  ParamTable<RunParams> t;
  t.string("run.hardware", &RunParams::hardware, "Hardware preset name or file the configuration was built from");
  t.string("run.model", &RunParams::model, "Model preset name or file the configuration was built from");
  t.integer("run.gpus", &RunParams::gpus, "GPUs in the expert-parallel group (EP size)").at_least(1).at_most(4096).in_unit("GPUs");
  // 2^40: token x top-k x row bytes products stay within 64 bits (memory is checked separately).
  t.integer("run.tokens", &RunParams::tokens, "Tokens in one MoE layer's input, summed over all GPUs")
      .at_least(1)
      .at_most(1099511627776.0)
      .in_unit("tokens");
  t.integer("run.seed", &RunParams::seed, "Seed of every random choice (routing, arrival jitter)").at_least(0);
  t.string("run.systems", &RunParams::systems, "Comma-separated systems to run, or 'all' (every system that models the configuration; the others are listed with their reason)");
  t.time("run.time_limit", &RunParams::time_limit,
         "Simulated time after which a run that has not finished is reported as stuck")
      .positive();
  t.bytes("run.memory_budget", &RunParams::memory_budget,
          "Memory a run may need (estimated before it starts); 0: half of the machine's physical memory")
      .at_least(0);
  t.boolean("run.check", &RunParams::check,
            "Check conservation at the end of every run (packets, credits, kernels); always on in debug builds");
  t.boolean("run.functional", &RunParams::functional,
            "Carry real data through the modelled datapath and check it against the reference");
  return t;
}

}  // namespace

void declare_run_params(ParamRegistry& r) { run_table().declare(r); }

RunParams RunParams::from(const Config& c) {
  RunParams p;
  run_table().read(c, p);
  return p;
}

}  // namespace moehub
