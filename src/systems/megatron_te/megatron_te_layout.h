#pragma once
// Where Megatron's all-to-all dispatcher puts GPU g's rows in each of its buffers, as its own
// mechanism computes them: shared by the timing program (megatron_te.cpp) and its functional
// companion (megatron_te_functional.cpp).

#include <cstdint>
#include <vector>

#include "moe/workload.h"
#include "sim/per_gpu.h"

namespace moehub {

struct MegatronLayout {
  std::vector<RowRef> perm;           // permutation 1 order: (dst GPU, local expert, token)
  PerGpu<int64_t> send_off;           // input_splits prefix: first row of perm for each dst
  PerGpu<int64_t> send_rows;          // input_splits
  PerGpu<int64_t> recv_off;           // output_splits prefix: first recv row from each src
  PerGpu<int64_t> recv_rows;          // output_splits
  std::vector<int64_t> sorted_from;   // recv row each row after sort_chunks (expert-major) comes from
  std::vector<uint64_t> expert_rows;  // num_tokens_per_local_expert
  int64_t recv_total = 0;
};

MegatronLayout make_megatron_layout(const Workload& w, int g);

}  // namespace moehub
