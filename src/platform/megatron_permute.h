#pragma once
// Megatron-Core's unfused `moe_utils.permute` (dropless, with probs), as its Python code issues
// it at NVIDIA/Megatron-LM 0014f13 megatron/core/transformer/moe/moe_utils.py:293-307 (the
// dispatcher version docs/research/systems.md section 1 follows; core_r0.11.0 permutes the
// rows the same way): the routing map [T, E] is transposed to [E, T], the token ids
// arange(T) expanded to [E, T] are masked_select-ed by it (expert-major token ids), the rows
// gathered by them (index_select), then the probs transposed and masked_select-ed alike. Each
// masked_select is a nonzero with a blocking D2H copy of its count (platform/framework_calls).
// The element sizes are the PyTorch dtypes of the cited code.

#include <cstdint>
#include <functional>

#include "gpu/stream.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub::megatron_permute {

inline constexpr uint64_t kMaskBytes = 1;  // torch.bool routing map
inline constexpr uint64_t kLongBytes = 8;  // torch.int64 indices and counts
inline constexpr uint64_t kProbBytes = 4;  // fp32 probs

// Issues permutation 1 of GPU g's `tokens` tokens over `experts` experts selecting `rows`
// (token, expert) pairs on `stream`; `rows_done` runs when the row gather ends. 11 framework
// ops, 12 kernels + 2 x (1 or 2) for the counts, 2 D2H copies and 2 host syncs.
void issue_permute(Cluster& c, const SharedKernels& k, int g, gpu::Stream& stream, uint64_t tokens, uint64_t experts,
                   uint64_t rows, std::function<void()> rows_done);

// Issues `_DeepepManager._indices_to_multihot` (Megatron-LM 0014f13 token_dispatcher.py:955-984)
// of the `tokens` tokens GPU g received, each with `topk` local expert ids (-1: not on this
// GPU), `rows` of them valid, into a [tokens, local_experts] map and probs. 11 framework ops:
// 2 masked indexings and the repeat_interleave block the host (4 D2H copies and syncs).
void issue_indices_to_multihot(Cluster& c, const SharedKernels& k, int g, gpu::Stream& stream, uint64_t tokens,
                               uint64_t topk, uint64_t local_experts, uint64_t rows);

}  // namespace moehub::megatron_permute
