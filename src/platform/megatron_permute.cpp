#include "platform/megatron_permute.h"

#include "platform/framework_calls.h"

namespace moehub::megatron_permute {

void issue_permute(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, uint64_t tokens, uint64_t experts,
                   uint64_t rows, std::function<void()> rows_done) {
  const uint64_t map = tokens * experts;
  // `routing_map.bool()` (already bool: returns itself), `.T`, `.contiguous()` (a transposing
  // copy), `torch.arange(T)`, `.unsqueeze(0)`, `.expand(E, -1)` (moe_utils.py:295-300).
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "permute1_",
                      {{"bool", {}},
                       {"T", {}},
                       {"map_contiguous", {2 * map * kMaskBytes}},
                       {"arange", {tokens * kLongBytes}},
                       {"unsqueeze", {}},
                       {"expand", {}}});
  // token_indices.masked_select(routing_map) (L301), then tokens.index_select(0, ids) (L304).
  masked_select_op(c, k, g, s, Activity::DataShuffle, "permute1_token_ids", map, rows, kLongBytes);
  gpu::KernelSpec gather = k.permute(g, rows, "permute1_rows");
  gather.on_done = std::move(rows_done);
  c.op(g, s, Activity::DataShuffle, std::move(gather));
  // probs.T.contiguous().masked_select(routing_map) (L307).
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "permute1_",
                      {{"probs_T", {}}, {"probs_contiguous", {2 * map * kProbBytes}}});
  masked_select_op(c, k, g, s, Activity::DataShuffle, "permute1_probs", map, rows, kProbBytes);
}

}  // namespace moehub::megatron_permute
