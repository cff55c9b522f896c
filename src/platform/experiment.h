#pragma once
// Runs the chosen systems on one workload, each in its own simulator and cluster (in parallel
// over threads; results are independent of the thread count), and derives the report: layer
// and end-to-end times, the Fig. 3 breakdown, the Fig. 15 window and dispatch/combine rates.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "moe/workload.h"
#include "sim/trace_recorder.h"
#include "platform/layer_result.h"
#include "platform/moe_system.h"

namespace moehub {

struct ExperimentOptions {
  bool trace = false;
  bool functional = false;
  unsigned threads = 1;
  // For a progress display: called from the simulating threads (the callee synchronises) with
  // each system's simulated time and events so far, and once more when it finished.
  std::function<void(const std::string& system, Time simulated, uint64_t events, bool finished)> progress;
};

// The threads run_experiment uses for `systems` systems: options.threads, at least one, at
// most one per system.
unsigned experiment_threads(const ExperimentOptions& options, size_t systems);

struct SystemOutcome {
  std::string name;
  LayerResult result;
  std::unique_ptr<TraceRecorder> trace;
  uint64_t events = 0;
  double sim_s = 0;  // wall seconds its simulation took (host-dependent: not part of `result`)
  bool functional_passed = true;
};

std::vector<SystemOutcome> run_experiment(const Config& config, const Workload& workload,
                                          const std::vector<const SystemEntry*>& systems,
                                          const ExperimentOptions& options);

// The non-MoE work of one layer that every system shares, for this config and workload.
LayerFrame layer_frame(const Config& config, const Workload& workload);

}  // namespace moehub
