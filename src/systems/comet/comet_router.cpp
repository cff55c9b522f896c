#include "systems/comet/comet_router.h"

#include "gpu/gemm.h"
#include "platform/framework_calls.h"

namespace moehub {
namespace {

constexpr uint64_t kIndexBytes = 8;   // torch.topk's int64 indices
constexpr uint64_t kFloatBytes = 4;   // softmax(dtype=torch.float32)

uint64_t routed_per_gpu(const Cluster& c) {
  return static_cast<uint64_t>(c.workload().tokens().max_count()) * static_cast<uint64_t>(c.model().top_k());
}

}  // namespace

void launch_comet_router(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens) {
  const ModelShape& m = c.model();
  if (!c.phases(g).routing_start) c.phases(g).routing_start = c.sim().now();
  const uint64_t t = static_cast<uint64_t>(tokens), e = static_cast<uint64_t>(c.workload().logical_experts()),
                 tk = t * static_cast<uint64_t>(m.top_k()), eb = static_cast<uint64_t>(m.dtype_bytes);
  c.host(g).framework_op();  // moe_layer.py:696 reshape
  // router.py:66 torch.nn.functional.linear(input, self.weight): [T, H] x [H, E] in bf16.
  c.host(g).framework_op();
  gpu::GemmModel gate(c.gpu_config(), gpu::GemmProblem{{t}, e, static_cast<uint64_t>(m.hidden), static_cast<uint32_t>(eb)});
  c.launch(g, s, Activity::Routing, gate.kernel("comet_router_gate"));
  issue_framework_ops(c, k, g, s, Activity::Routing, "comet_router_",
                      {{"view", {}},                                      // router.py:311
                       {"routing_view", {}},                              // router.py:266
                       {"topk", {t * e * eb + tk * (eb + kIndexBytes)}},  // moe_utils.py:318
                       {"softmax", {tk * (eb + kFloatBytes)}},            // :319 softmax(fp32)
                       {"type_as", {tk * (kFloatBytes + eb)}},            // :319 .type_as(logits)
                       {"indices_view", {}}});                            // :323 view(-1)
  // :323 torch.bincount(minlength=E): min, .cpu(), max, .cpu() (each a blocking copy issued
  // from C++, no framework op of its own), zeros and the shared-memory histogram kernel.
  c.host(g).framework_op();
  c.launch(g, s, Activity::Routing, k.memory(g, "comet_router_bincount_min", tk * kIndexBytes + kIndexBytes));
  c.host_sync(g, s, kIndexBytes, Time::zero(), nullptr);
  c.launch(g, s, Activity::Routing, k.memory(g, "comet_router_bincount_max", tk * kIndexBytes + kIndexBytes));
  c.host_sync(g, s, kIndexBytes, Time::zero(), nullptr);
  c.launch(g, s, Activity::Routing, k.memory(g, "comet_router_bincount_zeros", e * kIndexBytes));
  c.launch(g, s, Activity::Routing, k.memory(g, "comet_router_bincount", tk * kIndexBytes + e * kIndexBytes));
}

void comet_all_gather_outputs(Cluster& c, int g) {
  c.host(g).framework_op();  // :699 torch.empty(probs0_dim_size)
  c.host(g).framework_op();  // :702 torch.empty(indices0_dim_size)
}

uint64_t comet_probs_bytes(const Cluster& c) { return routed_per_gpu(c) * static_cast<uint64_t>(c.model().dtype_bytes); }
uint64_t comet_indices_bytes(const Cluster& c) { return routed_per_gpu(c) * kIndexBytes; }

}  // namespace moehub
