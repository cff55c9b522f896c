#pragma once
// The flags `run` and `verify` share: presets, scale, workload, systems, config files, --set;
// and the systems they select from the built configuration.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_builder.h"
#include "report/run_report.h"
#include "systems/system_registry.h"

namespace moehub {

struct ExperimentFlags {
  ConfigRequest request;
  std::string model, hardware, gpus, tokens, imbalance, routing_trace, systems, seed, tp;
  bool check = false;

  void add_to(CLI::App& cmd);
  // Appends the flags that were given to request.flags (once, before building the config).
  ConfigRequest resolve_request() const;
};

// The systems `run.systems` names. With "all", those without a model of the configuration are
// left out and listed in `skipped` (drop_unmodelled); a system named on its own is refused later.
struct SelectedSystems {
  std::vector<const SystemEntry*> systems;
  SkippedSystems skipped;
};
SelectedSystems select_run_systems(const Config& cfg);

}  // namespace moehub
