#pragma once
// Where Megatron's all-to-all dispatcher puts GPU g's rows in each of its buffers, as its own
// mechanism computes them: shared by the timing program (megatron_te.cpp) and its functional
// companion (megatron_te_functional.cpp).
//
// Under EP+TP (parallel.tp = T > 1; moe/tp_layout.h) the dispatcher routes over the E logical
// experts: GPU g sends each routed row once, to the GPU of the row's EP rank with g's TP rank
// (the EP all-to-all), and the TP group then all-gathers what its ranks received, so that every
// TP rank computes its shard on all rows of its local experts (NVIDIA/Megatron-LM @d98e8a64
// megatron/core/transformer/moe/token_dispatcher.py L557-590, L741-751).

#include <cstdint>
#include <vector>

#include "moe/workload.h"
#include "sim/per_gpu.h"

namespace moehub {

struct MegatronLayout {
  std::vector<RowRef> perm;           // permutation 1 order: (dst GPU, local expert, token)
  PerGpu<int64_t> send_off;           // input_splits prefix: first row of perm for each dst
  PerGpu<int64_t> send_rows;          // input_splits (0 for a GPU outside g's EP group)
  PerGpu<int64_t> recv_off;           // output_splits prefix: first recv row from each src
  PerGpu<int64_t> recv_rows;          // output_splits (0 for a GPU outside g's EP group)
  int64_t recv_total = 0;
  // The TP all-gather's output: the TP group's receive buffers, one block per TP rank
  // (output_splits_tp); with T = 1 the receive buffer itself.
  std::vector<int> tp_group;          // the GPUs of g's TP group, by TP rank
  std::vector<int64_t> gather_off;    // first gathered row of each TP rank's block
  std::vector<int64_t> gather_rows;   // output_splits_tp
  int64_t gather_total = 0;
  int64_t tp_rank = 0;                // g's block in the gathered buffer
  std::vector<int64_t> sorted_from;   // gathered row each row after sort_chunks (expert-major) comes from
  std::vector<uint64_t> expert_rows;  // num_tokens_per_local_expert
};

MegatronLayout make_megatron_layout(const Workload& w, int g);

// The routing the dispatcher sees: the physical one under pure EP (replicas are experts of
// their own), the logical one under EP+TP (its shards are not).
const Routing& megatron_routing(const Workload& w);

}  // namespace moehub
