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

namespace {

// `arange(B).repeat_interleave(counts)` by a CUDA counts tensor without output_size
// (pytorch 6fa06991 aten/src/ATen/native/Repeat.h:22-37, the self-Tensor overload then
// index_selects arange by the result): cumsum (CUB DeviceScan: a tile-state init and the scan,
// as DeviceSelect), `cumsum[-1].item()` and `(repeats >= 0).all().item()` (two blocking D2H
// copies), the compute kernel, index_select. An empty counts tensor returns before all of it.
void repeat_interleave_op(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, uint64_t counts, uint64_t total) {
  constexpr uint64_t kInt = 4;
  c.host(g).framework_op();
  if (counts == 0) return;
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_cumsum_init", 2 * kInt));
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_cumsum", 2 * counts * kLongBytes));
  c.host_sync(g, s, kLongBytes, Time::zero(), nullptr);
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_repeats_ge", counts * (kLongBytes + kMaskBytes)));
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_repeats_all", counts * kMaskBytes + kMaskBytes));
  c.host_sync(g, s, kMaskBytes, Time::zero(), nullptr);
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_repeat_compute", 2 * counts * kLongBytes + total * kLongBytes));
  c.launch(g, s, Activity::DataShuffle, k.memory(g, "multihot_repeat_index_select", total * 3 * kLongBytes));
}

}  // namespace

void issue_indices_to_multihot(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, uint64_t tokens, uint64_t topk,
                               uint64_t local_experts, uint64_t rows) {
  const uint64_t map = tokens * local_experts;
  const uint64_t ids = tokens * topk;
  // Two torch.zeros (int64 map, fp32 probs; L969, L973), `indices != -1` (L977).
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "multihot_",
                      {{"zeros_map", {map * kLongBytes}},
                       {"zeros_probs", {map * kProbBytes}},
                       {"mask", {ids * (kLongBytes + kMaskBytes)}}});
  masked_select_op(c, k, g, s, Activity::DataShuffle, "multihot_valid_indices", ids, rows, kLongBytes);  // L978
  // torch.arange(B) (L979), mask.sum(dim=1) (L980), then the repeat_interleave.
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "multihot_",
                      {{"arange", {tokens * kLongBytes}}, {"mask_sum", {ids * kMaskBytes + tokens * kLongBytes}}});
  repeat_interleave_op(c, k, g, s, tokens, rows);
  // map[row_indices, valid_indices] = 1 (L982: the 1 is a CPU scalar, index_put_ one kernel).
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "multihot_", {{"put_map", {rows * 3 * kLongBytes}}});
  masked_select_op(c, k, g, s, Activity::DataShuffle, "multihot_valid_probs", ids, rows, kProbBytes);  // L983
  // probs[row_indices, valid_indices] = ... (L983), `.bool()` of the int64 map (L984).
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "multihot_",
                      {{"put_probs", {rows * (2 * kLongBytes + 2 * kProbBytes)}},
                       {"map_bool", {map * (kLongBytes + kMaskBytes)}}});
}

}  // namespace moehub::megatron_permute
