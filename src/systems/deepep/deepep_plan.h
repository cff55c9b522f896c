#pragma once
// DeepEP's dispatch layout (get_dispatch_layout, notify_dispatch's prefix matrices) and
// Megatron's expert-major permutation of the received tokens: shared by the timing program
// (deepep.cpp) and its functional companion (deepep_functional.cpp).

#include <cstdint>
#include <vector>

#include "moe/workload.h"
#include "sim/per_gpu.h"
#include "systems/deepep/deepep_kernels.h"

namespace moehub {

// Per GPU: what it sends (by channel and peer) and how its receive buffer is laid out.
struct DeepEpPlan {
  int n = 0, channels = 0;
  // send(src, dst)[c]: src's tokens of channel c with at least one expert on dst, in order.
  PerPair<std::vector<std::vector<int64_t>>> send;
  // recv_first(dst, src)[c]: recv_x row of the first token of (src, c) on dst
  // (rank_prefix_matrix + channel_prefix_matrix).
  PerPair<std::vector<int64_t>> recv_first;
  PerGpu<std::vector<int64_t>> recv_token;  // [dst][recv row] -> global token
  PerGpu<std::vector<int32_t>> lowest_rank;  // [src][local token] lowest rank holding one of its experts
  ChannelCounts counts;
};

DeepEpPlan make_deepep_plan(const Workload& w, int channels);

// Megatron's expert-major permutation of GPU g's received tokens.
struct DeepEpExpertRows {
  std::vector<int64_t> from;      // recv row of each permuted row
  std::vector<float> prob;        // its routing weight
  std::vector<uint64_t> per_expert;  // rows of each local expert, one run after another
};

DeepEpExpertRows make_deepep_expert_rows(const Workload& w, const DeepEpPlan& p, int g);

}  // namespace moehub
