#pragma once
// The flags `run` and `verify` share: presets, scale, workload, systems, config files, --set.

#include <CLI/CLI.hpp>
#include <string>

#include "config/config_builder.h"

namespace moehub {

struct ExperimentFlags {
  ConfigRequest request;
  std::string model, hardware, gpus, tokens, imbalance, routing_trace, systems, seed, tp;
  bool check = false;

  void add_to(CLI::App& cmd);
  // Appends the flags that were given to request.flags (once, before building the config).
  ConfigRequest resolve_request() const;
};

}  // namespace moehub
