#include "config/run_params.h"

namespace moehub {

void declare_run_params(ParamRegistry& r) {
  r.string("run.hardware", "Hardware preset name or file the configuration was built from");
  r.string("run.model", "Model preset name or file the configuration was built from");
  r.integer("run.gpus", "GPUs in the expert-parallel group (EP size)").at_least(1).at_most(4096).in_unit("GPUs");
  // 2^40: token x top-k x row bytes products stay within 64 bits (memory is checked separately).
  r.integer("run.tokens", "Tokens in one MoE layer's input, summed over all GPUs")
      .at_least(1)
      .at_most(1099511627776.0)
      .in_unit("tokens");
  r.integer("run.seed", "Seed of every random choice (routing, arrival jitter)").at_least(0);
  r.string("run.systems", "Comma-separated systems to run, or 'all'");
  r.time("run.time_limit", "Simulated time after which a run that has not finished is reported as stuck").positive();
  r.bytes("run.memory_budget",
          "Memory a run may need (estimated before it starts); 0: half of the machine's physical memory")
      .at_least(0);
  r.boolean("run.check",
            "Check conservation at the end of every run (packets, credits, kernels); always on in debug builds");
  r.boolean("run.functional", "Carry real data through the modelled datapath and check it against the reference");
}

}  // namespace moehub
