#pragma once
// The load EPLB places redundant experts from (workload.placement_load). Deployments do not
// know a batch's load before it is routed: DeepSeek's EPLB "computes a balanced expert
// replication and placement plan based on the estimated expert loads ... A common method is to
// use moving average of historical statistics" (deepseek-ai/EPLB @d52c72d README.md:11-13);
// SGLang records every forward pass's per-expert counts in a window of
// `expert_distribution_recorder_buffer_size` passes and, every `eplb_rebalance_num_iterations`
// (default 1000, the window's default too), rebalances from their sum
// (sgl-project/sglang @53e29da eplb_manager.py:45-50, 61-75; @7d81985
// eplb_algorithms/__init__.py:27 `weight=tokens_per_expert.sum(dim=0)`). So a layer runs with a
// placement computed from other batches' loads of the same layer:
//   this-layer: the simulated batch's own load (an oracle; the best case for replication);
//   previous:   the sum of W past batches' loads (W = workload.placement_window):
//     synthetic routing: W draws of the generator with seeds derived from run.seed, whose
//       popularity shape is correlated with the simulated batch's by workload.placement_correlation
//       (0: independent draws, as the figures' seeds are; 1: the same popularity);
//     a routing trace: its W layers before workload.trace_layer, read as the same MoE layer's
//       earlier iterations (layer index = iteration).
// Every seed and every trace layer gets the placement computed from its own past.

#include <cstdint>
#include <string>
#include <vector>

#include "moe/synthetic_routing.h"

namespace moehub {

enum class PlacementLoad { ThisLayer, Previous };

// The seed of past batch b (1 = the batch just before the simulated one) of a run seeded `seed`.
uint64_t past_batch_seed(uint64_t seed, int64_t batch);

// Past batch b's raw popularity shape: rho z + sqrt(1 - rho^2) z_b, where z is the simulated
// batch's raw shape draw and z_b an independent draw from the past batch's seed (a standard
// normal per expert again, so the generator scales it to the requested std as any shape).
std::vector<double> past_batch_shape(const std::vector<double>& now, uint64_t past_seed, double correlation);

// Sum over past batches 1..window of the generator's loads for the blended shape (each batch
// the spec of the simulated one but for its seed).
std::vector<int64_t> synthetic_history_load(const SyntheticRoutingSpec& now, int64_t window, double correlation);

}  // namespace moehub
