#pragma once
// Runs the chosen systems on one workload, each in its own simulator and cluster (in parallel
// over threads; results are independent of the thread count), and derives the report: layer
// and end-to-end times, the Fig. 3 breakdown, the Fig. 15 window and dispatch/combine rates.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
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

// Why `system` has no model of this configuration: the parameter that rules it out and the
// reason; nothing when it has one. run_experiment refuses such a system (UserError naming the
// parameter); `run.systems = "all"` leaves it out instead (drop_unmodelled).
struct Unmodelled {
  std::string param;
  std::string reason;
};
std::optional<Unmodelled> missing_model(const SystemEntry& system, const Config& config);
// Throws UserError (the parameter, "system '<name>' <reason>") for the first system that
// missing_model refuses; run and verify call it before the memory estimate, whose refusal a
// raised budget would only trade for this one.
void require_modelled(const std::vector<const SystemEntry*>& systems, const Config& config);

// Removes from `systems` those without a model of this configuration and returns them as
// "name" -> reason, in registry order; `all` then means every system that applies.
std::vector<std::pair<std::string, std::string>> drop_unmodelled(std::vector<const SystemEntry*>& systems,
                                                                 const Config& config);

std::vector<SystemOutcome> run_experiment(const Config& config, const Workload& workload,
                                          const std::vector<const SystemEntry*>& systems,
                                          const ExperimentOptions& options);

// The non-MoE work of one layer that every system shares, for this config and workload.
LayerFrame layer_frame(const Config& config, const Workload& workload);

}  // namespace moehub
