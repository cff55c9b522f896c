#pragma once
// The `run.*` section: what one experiment runs (presets, scale, seed, systems, limits).

#include <cstdint>
#include <string>

#include "config/config.h"
#include "config/param_registry.h"
#include "sim/time.h"

namespace moehub {

struct RunParams {
  std::string hardware;        // preset name or file
  std::string model;           // preset name or file
  int64_t gpus = 1;            // EP size
  int64_t tokens = 1;          // all GPUs together
  uint64_t seed = 0;
  std::string systems;         // comma-separated, or "all"
  Time time_limit;             // a run still going at this simulated time is stopped
  uint64_t memory_budget = 0;  // bytes; 0: half the machine's physical memory
  bool check = false;          // conservation checks at the end of every run
  bool functional = false;     // real data through the datapath

  static RunParams from(const Config& config);
};

void declare_run_params(ParamRegistry& registry);

}  // namespace moehub
