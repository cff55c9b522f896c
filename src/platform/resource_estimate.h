#pragma once
// What a run will need, estimated from the resolved configuration before the workload is built
// or anything simulated (issue 22): memory (the routed workload, each system's per-row state,
// functional buffers) against run.memory_budget, and a lower bound on the layer's simulated
// time (its expert GEMMs at peak tensor throughput on every GPU) against run.time_limit. A run
// that cannot fit either is refused with the one-line error naming the parameter and the limit,
// instead of growing until the machine swaps or simulating until the limit.

#include <cstdint>

#include <vector>

#include "config/config.h"
#include "moe/model_shape.h"
#include "platform/moe_system.h"

namespace moehub {

struct ResourceEstimate {
  uint64_t memory_bytes = 0;
  uint64_t budget_bytes = 0;
  double min_layer_seconds = 0;  // lower bound of the simulated layer time
};

// `concurrent`: systems simulated at the same time (each holds its own per-row state; the
// costliest of `systems` stands for each).
ResourceEstimate estimate_resources(const Config& config, const ModelShape& model,
                                    const std::vector<const SystemEntry*>& systems, unsigned concurrent);
// Throws UserError (run.memory_budget or run.time_limit) if the run cannot fit.
void check_resources(const Config& config, const ModelShape& model, const std::vector<const SystemEntry*>& systems,
                     unsigned concurrent);

}  // namespace moehub
