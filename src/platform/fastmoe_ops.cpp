#include "platform/fastmoe_ops.h"

#include <vector>

#include "platform/framework_calls.h"

namespace moehub {
namespace {

constexpr uint64_t kInt32 = 4, kInt64 = 8, kFp32 = 4;

uint64_t routed(const Cluster& c, int64_t tokens) { return static_cast<uint64_t>(tokens * c.model().top_k()); }
uint64_t experts(const Cluster& c) { return static_cast<uint64_t>(c.model().experts()); }

}  // namespace

void launch_fastmoe_gate(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens) {
  const ModelShape& m = c.model();
  if (!c.phases(g).routing_start) c.phases(g).routing_start = c.sim().now();
  const uint64_t t = static_cast<uint64_t>(tokens), e = static_cast<uint64_t>(c.workload().logical_experts()),
                 tk = routed(c, tokens), eb = static_cast<uint64_t>(m.dtype_bytes);
  // self.gate(inp): nn.Linear (bias fused into the GEMM's epilogue) [T, H] x [H, E].
  c.host(g).framework_op();
  gpu::GemmModel gate(c.gpu_config(), gpu::GemmProblem{{t}, e, static_cast<uint64_t>(m.hidden), static_cast<uint32_t>(m.dtype_bytes)});
  c.launch(g, s, Activity::Routing, gate.kernel("fmoe_gate"));
  const std::vector<FrameworkOp> ops{
      // torch.topk(sorted=False): one selection kernel over the [T, E] logits.
      {"topk", {t * e * eb + tk * (eb + kInt64)}},
      {"view", {}},
      {"softmax", {2 * tk * eb}},
      {"zeros_cpu", {}},  // torch.zeros(1, requires_grad=True) on the CPU
  };
  issue_framework_ops(c, k, g, s, Activity::Routing, "fmoe_gate_", ops);
  blocking_copy_op(c, g, s, kFp32, true);  // .cuda() of the dummy loss
}

void launch_fastmoe_count(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens) {
  const uint64_t e = experts(c);
  const std::vector<FrameworkOp> ops{
      {"zeros", {e * kInt32}},
      {"expert_count", {routed(c, tokens) * kInt64 + e * kInt32}},
      {"long", {e * (kInt32 + kInt64)}},
  };
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "fmoe_", ops);
}

void launch_fastmoe_positions(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens) {
  const uint64_t e = experts(c), tk = routed(c, tokens);
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "fmoe_",
                      {{"cumsum", {2 * e * kInt64}}, {"int", {e * (kInt64 + kInt32)}}, {"select_last", {}}});
  blocking_copy_op(c, g, s, kInt32, false);  // .item()
  issue_framework_ops(c, k, g, s, Activity::DataShuffle, "fmoe_",
                      {{"empty", {}}, {"assign_pos", {e * kInt32 + tk * kInt64 + tk * kInt64}}});
}

}  // namespace moehub
