#include "platform/megatron_router.h"

#include <vector>

#include "platform/framework_calls.h"

namespace moehub {

void launch_megatron_router(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens) {
  const ModelShape& m = c.model();
  if (!c.phases(g).routing_start) c.phases(g).routing_start = c.sim().now();
  // The router scores the E logical experts and picks k of them (replicas and TP shards come
  // after it).
  const uint64_t t = static_cast<uint64_t>(tokens), e = static_cast<uint64_t>(c.workload().logical_experts()),
                 tk = t * static_cast<uint64_t>(c.workload().logical_model().top_k());
  constexpr uint64_t kBf16 = 2, kFp32 = 4, kInt32 = 4, kInt64 = 8, kBool = 1;
  // gating: F.linear(input, weight) [T, H] x [H, E] -> logits (BF16).
  c.host(g).framework_op();
  gpu::GemmModel gate(c.gpu_config(), gpu::GemmProblem{{t}, e, static_cast<uint64_t>(m.hidden), static_cast<uint32_t>(m.dtype_bytes)});
  c.launch(g, s, Activity::Routing, gate.kernel("router_gate"));
  const std::vector<FrameworkOp> inference{
      {"view", {}},
      {"view", {}},
      // topk: radix select over the [T, E] logits, then the in-place sort of the k results.
      {"topk", {t * e * kBf16 + tk * (kBf16 + kInt64), 2 * tk * (kBf16 + kInt64)}},
      // softmax(scores, dtype=fp32): a BF16 -> FP32 cast, then the softmax.
      {"softmax", {tk * (kBf16 + kFp32), 2 * tk * kFp32}},
      {"type_as", {tk * (kFp32 + kBf16)}},
      {"zeros_like", {t * e * kBf16}},
      {"scatter_probs", {2 * t * e * kBf16, tk * (kInt64 + 2 * kBf16)}},
      {"zeros_like", {t * e * kBf16}},
      {"int", {t * e * (kBf16 + kInt32)}},
      {"scatter_map", {2 * t * e * kInt32, tk * (kInt64 + kInt32)}},
      {"bool", {t * e * (kInt32 + kBool)}},
      {"tokens_per_expert_sum", {t * e * kBool + e * kInt64}},
  };
  // Training with the auxiliary load-balancing loss (aux_loss_load_balancing,
  // switch_load_balancing_loss_func, the aux-loss tracker, MoEAuxLossAutoScaler).
  const std::vector<FrameworkOp> aux_loss{
      {"softmax_full", {t * e * (kBf16 + kFp32), 2 * t * e * kFp32}},
      {"get_world_size", {}},
      {"all_reduce_tp_cp", {}},  // a group of one rank: NCCL's one-rank path launches nothing
      {"probs_sum", {t * e * kFp32 + e * kFp32}},
      {"mul_tokens", {e * (kFp32 + kInt64 + kFp32)}},
      {"sum", {e * kFp32 + kFp32}},
      {"mul_coeff", {2 * kFp32}},
      {"div_coeff", {2 * kFp32}},
      {"select", {}},
      {"detach", {}},
      {"tracker_add", {2 * kFp32}},
      {"setitem", {}},
      {"aux_loss_scaler_apply", {}},
  };
  issue_framework_ops(c, k, g, s, Activity::Routing, "router_", inference);
  if (c.kernel_params().megatron_router_aux_loss) issue_framework_ops(c, k, g, s, Activity::Routing, "router_", aux_loss);
}

}  // namespace moehub
