#include "systems/tutel/tutel_gate.h"

#include <vector>

#include "gpu/gemm.h"
#include "platform/framework_calls.h"

namespace moehub {
namespace {

constexpr uint64_t kInt32 = 4, kInt64 = 8;  // topk and one-hot masks are int64, locations int32

// torch.ops.tutel_ops.cumsum (custom_kernel.cpp:729-779): the C++ op casts the int64 mask to
// int32 (`x.to(kInt32)`, a kernel at raw launch cost) and runs cumsum_fn.
FrameworkOp cumsum(uint64_t t, uint64_t e) { return {"cumsum", {t * e * (kInt64 + kInt32), 2 * t * e * kInt32}}; }

}  // namespace

void launch_tutel_routing(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens, const ModelShape& m) {
  if (!c.phases(g).routing_start) c.phases(g).routing_start = c.sim().now();
  const uint64_t t = static_cast<uint64_t>(tokens), e = static_cast<uint64_t>(m.experts()),
                 top = static_cast<uint64_t>(m.top_k()), eb = static_cast<uint64_t>(m.dtype_bytes);
  // moe_layer.py:228 input.reshape, :230 x.to(p.dtype) (the model's dtype already: no kernel).
  issue_framework_ops(c, k, g, s, Activity::Routing, "tutel_", {{"reshape", {}}, {"to_param_dtype", {}}});
  // top.py:26 wg(x): nn.Linear without bias in the model's dtype (fp32_gate=False, top.py:7).
  c.host(g).framework_op();
  gpu::GemmModel gate(c.gpu_config(), gpu::GemmProblem{{t}, e, static_cast<uint64_t>(m.hidden), static_cast<uint32_t>(eb)});
  c.launch(g, s, Activity::Routing, gate.kernel("tutel_gate"));
  issue_framework_ops(c, k, g, s, Activity::Routing, "tutel_",
                      {{"softmax", {2 * t * e * eb}},                        // moe_layer.py:251
                       {"topk", {t * e * eb + t * top * (eb + kInt64)}}});  // fast_dispatch.py:143
  // The masks, gate values and locations are address resolution (logged as DataShuffle, as
  // the other systems' count and position kernels); the loss is the router's.
  std::vector<FrameworkOp> ops{{"chunk", {}}};  // :145
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"view", {}});  // :145 x.view(-1)
  // :147 _one_hot_with_dtype (losses.py:8-9): zeros [T, E] int64, unsqueeze, scatter_.
  for (uint64_t j = 0; j < top; ++j) {
    ops.push_back({"one_hot_zeros", {t * e * kInt64}});
    ops.push_back({"unsqueeze", {}});
    ops.push_back({"one_hot_scatter", {2 * t * kInt64}});
  }
  // :148 (scores * mask).sum(dim=1) per slot.
  for (uint64_t j = 0; j < top; ++j) {
    ops.push_back({"gate_mul", {t * e * (2 * eb + kInt64)}});
    ops.push_back({"gate_sum", {t * e * eb + t * eb}});
  }
  // :150 gshard_loss (losses.py:12-19): top_ids[:, 0], a one-hot of the scores' dtype, the
  // column sums of scores and mask, their product, its sum, / num_samples.
  const std::vector<FrameworkOp> loss{
      {"loss_select", {}},          {"loss_zeros", {t * e * eb}},       {"loss_unsqueeze", {}},
      {"loss_scatter", {t * (kInt64 + eb)}}, {"loss_me", {t * e * eb + e * eb}}, {"loss_ce", {t * e * eb + e * eb}},
      {"loss_mul", {3 * e * eb}},  {"loss_sum", {e * eb + eb}},        {"loss_div", {2 * eb}},
  };
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "tutel_", ops);
  issue_framework_ops(c, k, g, s, Activity::Routing, "tutel_", loss);
  ops.clear();
  // :158-160 slot 0's locations: cumsum, (locations * mask).sum(dim=1).to(int32).
  const std::vector<FrameworkOp> location{
      {"loc_mul", {t * e * (kInt32 + 2 * kInt64)}}, {"loc_sum", {t * e * kInt64 + t * kInt64}}, {"loc_int", {t * (kInt64 + kInt32)}}};
  ops.push_back(cumsum(t, e));
  ops.insert(ops.end(), location.begin(), location.end());
  // :164-168 each further slot: the base of earlier slots (column sum, accumulated from the
  // third slot on), its cumsum plus that base, its locations.
  for (uint64_t j = 1; j < top; ++j) {
    ops.push_back({"acc_sum", {t * e * kInt64 + e * kInt64}});
    if (j > 1) ops.push_back({"acc_add", {3 * e * kInt64}});
    ops.push_back(cumsum(t, e));
    ops.push_back({"loc_add_base", {2 * t * e * kInt32 + e * kInt64}});
    ops.insert(ops.end(), location.begin(), location.end());
  }
  if (top > 1) {
    // :171-172 normalize_gate: Python's sum() (0 + g0 + g1 ...), clamp, one division per slot.
    ops.push_back({"gate_sum0", {2 * t * eb}});
    for (uint64_t j = 1; j < top; ++j) ops.push_back({"gate_add", {3 * t * eb}});
    ops.push_back({"gate_clamp", {2 * t * eb}});
    for (uint64_t j = 0; j < top; ++j) ops.push_back({"gate_div", {3 * t * eb}});
  }
  ops.push_back({"last_row", {}});                   // :175 locations2[-1]
  ops.push_back({"count_add", {2 * e * kInt32}});    // :175 ... + 1
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"index_int", {t * (kInt64 + kInt32)}});  // :177
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "tutel_", ops);
}

void launch_tutel_dispatcher_update(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens,
                                    const ModelShape& m) {
  const uint64_t t = static_cast<uint64_t>(tokens), eb = static_cast<uint64_t>(m.dtype_bytes);
  std::vector<FrameworkOp> ops;
  const uint64_t top = static_cast<uint64_t>(m.top_k());
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"indices_int", {}});  // :99, already int32
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"indices_view", {}});
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"locations_int", {}});  // :100, already int32
  for (uint64_t j = 0; j < top; ++j) ops.push_back({"gates_fp32", {t * (eb + kTutelDispatchBytes)}});  // :101
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "tutel_", ops);
}

}  // namespace moehub
