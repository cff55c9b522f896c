#pragma once
// Bytes of Megatron-Core's unfused `moe_utils.permute` (docs/research/systems.md 1.1 step 5),
// which both Megatron dispatchers modelled here run: the routing map [T, E] is transposed to
// [E, T], a stable argsort orders its E x T boolean keys (a radix sort carrying int64 indices),
// the first `rows` indices are taken modulo T to give token ids, the probs are gathered by
// them, then the rows themselves (SharedKernels::permute).

#include <cstdint>

namespace moehub::megatron_permute {

inline constexpr uint64_t kMaskBytes = 1;  // torch.bool routing map
inline constexpr uint64_t kLongBytes = 8;  // torch.int64 indices and counts
inline constexpr uint64_t kProbBytes = 4;  // fp32 probs

// Transpose (read + write the mask), then one radix pass over 1-byte keys (a histogram read of
// the keys, then read and write of keys) carrying int64 values (arange written, then read and
// written by the pass).
inline uint64_t argsort_bytes(uint64_t experts, uint64_t tokens) {
  const uint64_t keys = experts * tokens;
  return keys * (2 * kMaskBytes + 3 * kMaskBytes + 3 * kLongBytes);
}
// `sorted_indices[:rows] % T`: read and write int64.
inline uint64_t token_index_bytes(uint64_t rows) { return rows * 2 * kLongBytes; }
// Gather of one fp32 prob per row by an int64 index.
inline uint64_t probs_gather_bytes(uint64_t rows) { return rows * (kLongBytes + 2 * kProbBytes); }

}  // namespace moehub::megatron_permute
