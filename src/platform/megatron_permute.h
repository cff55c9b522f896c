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

// Bytes of the later argsort form of the same permute (Megatron-LM after 0014f13: a stable
// argsort over the transposed map, `% T`, a probs gather), which src/systems/deepep still
// models: the transpose, one radix pass over 1-byte keys carrying int64 values.
inline uint64_t argsort_bytes(uint64_t experts, uint64_t tokens) {
  const uint64_t keys = experts * tokens;
  return keys * (2 * kMaskBytes + 3 * kMaskBytes + 3 * kLongBytes);
}
// `sorted_indices[:rows] % T`: read and write int64.
inline uint64_t token_index_bytes(uint64_t rows) { return rows * 2 * kLongBytes; }
// Gather of one fp32 prob per row by an int64 index.
inline uint64_t probs_gather_bytes(uint64_t rows) { return rows * (kLongBytes + 2 * kProbBytes); }

// Issues permutation 1 of GPU g's `tokens` tokens over `experts` experts selecting `rows`
// (token, expert) pairs on `stream`; `rows_done` runs when the row gather ends. 11 framework
// ops, 12 kernels + 2 x (1 or 2) for the counts, 2 D2H copies and 2 host syncs.
void issue_permute(Cluster& c, const SharedKernels& k, int g, gpu::Stream& stream, uint64_t tokens, uint64_t experts,
                   uint64_t rows, std::function<void()> rows_done);

}  // namespace moehub::megatron_permute
