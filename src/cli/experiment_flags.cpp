#include "cli/experiment_flags.h"

#include "config/run_params.h"
#include "platform/experiment.h"

namespace moehub {

void ExperimentFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--model", model, "Model preset name or TOML file (default: mixtral-8x7b)");
  cmd.add_option("--hardware", hardware, "Hardware preset name or TOML file (default: dgx-h800)");
  cmd.add_option("--gpus", gpus, "GPUs in the expert-parallel group (default 8)");
  cmd.add_option("--nodes", request.nodes, "Nodes of the hardware preset's net.gpus_per_node GPUs (sets run.gpus)");
  cmd.add_option("--tp", tp, "Tensor-parallel degree of the experts; --gpus = EP x TP (default 1: pure EP)");
  cmd.add_option("--tokens", tokens, "Tokens over all GPUs (default 8192)");
  cmd.add_option("--imbalance", imbalance, "Std of the per-expert token fraction (default 0)");
  cmd.add_option("--routing-trace", routing_trace, "Routing trace file (CSV or JSONL)");
  cmd.add_option("--systems", systems, "Comma-separated systems, or 'all'");
  cmd.add_option("--seed", seed, "Random seed (default 1)");
  cmd.add_option("--config", request.config_files, "Experiment TOML file(s) applied over the presets");
  cmd.add_option("--set", request.assignments, "Override any parameter: KEY=VALUE (repeatable)");
  cmd.add_flag("--check", check, "Check conservation at the end of every system's run (packets, credits, kernels)");
}

ConfigRequest ExperimentFlags::resolve_request() const {
  ConfigRequest r = request;
  const auto flag = [&](const std::string& value, const char* path, const char* name) {
    if (!value.empty()) r.flags.push_back({path, value, name});
  };
  flag(hardware, "run.hardware", "--hardware");
  flag(model, "run.model", "--model");
  flag(gpus, "run.gpus", "--gpus");
  flag(tokens, "run.tokens", "--tokens");
  flag(tp, "parallel.tp", "--tp");
  flag(seed, "run.seed", "--seed");
  flag(systems, "run.systems", "--systems");
  flag(imbalance, "workload.imbalance_std", "--imbalance");
  flag(routing_trace, "workload.routing_trace", "--routing-trace");
  if (check) r.flags.push_back({"run.check", "true", "--check"});
  return r;
}

SelectedSystems select_run_systems(const Config& cfg) {
  const std::string names = RunParams::from(cfg).systems;
  SelectedSystems out;
  out.systems = select_systems(names);
  if (names == "all") out.skipped = drop_unmodelled(out.systems, cfg);
  return out;
}

}  // namespace moehub
