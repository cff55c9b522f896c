#include "platform/shared_kernels.h"

#include "gpu/memory_kernel.h"

namespace moehub {

namespace {
constexpr uint32_t kIndexBytes = 4;   // int32 token / expert indices
constexpr uint32_t kWeightBytes = 4;  // fp32 routing probabilities
}  // namespace

SharedKernels::SharedKernels(Cluster& cluster) : cluster_(cluster) {
  memory_shape_.threads = cluster.kernel_params().memory_block_threads;
}

void SharedKernels::launch_routing(int g, gpu::Stream& stream, int64_t tokens) {
  const ModelShape& m = cluster_.model();
  const uint32_t eb = static_cast<uint32_t>(m.dtype_bytes);
  if (!cluster_.phases(g).routing_start) cluster_.phases(g).routing_start = cluster_.sim().now();
  // The router scores the E logical experts (replicas are chosen after top-k).
  const auto experts = static_cast<uint64_t>(cluster_.workload().logical_experts());
  gpu::GemmModel gate(cluster_.gpu_config(),
                      gpu::GemmProblem{{static_cast<uint64_t>(tokens)}, experts,
                                       static_cast<uint64_t>(m.hidden), eb});
  cluster_.launch(g, stream, Activity::Routing, gate.kernel("router_gate"));
  const uint64_t bytes = gpu::memory_bytes::routing(static_cast<uint64_t>(tokens), experts,
                                                    static_cast<uint64_t>(cluster_.workload().logical_model().top_k()), eb,
                                                    kWeightBytes, kIndexBytes);
  cluster_.launch(g, stream, Activity::Routing, memory(g, "router_topk", bytes));
}

gpu::GemmModel SharedKernels::gemm1_model(const std::vector<uint64_t>& rows, const std::vector<uint64_t>& active) const {
  const ModelShape& m = cluster_.model();
  return gpu::GemmModel(cluster_.gpu_config(), gpu::GemmProblem{rows, static_cast<uint64_t>(m.gemm1_cols()),
                                                                static_cast<uint64_t>(m.hidden),
                                                                static_cast<uint32_t>(m.dtype_bytes), active});
}

gpu::GemmModel SharedKernels::gemm2_model(const std::vector<uint64_t>& rows) const {
  const ModelShape& m = cluster_.model();
  return gpu::GemmModel(cluster_.gpu_config(), gpu::GemmProblem{rows, static_cast<uint64_t>(m.hidden),
                                                                static_cast<uint64_t>(m.ffn_hidden),
                                                                static_cast<uint32_t>(m.dtype_bytes)});
}

gpu::KernelSpec SharedKernels::activation(int g, uint64_t rows) const {
  const ModelShape& m = cluster_.model();
  return memory(g, "activation",
                gpu::memory_bytes::activation(rows, static_cast<uint64_t>(m.ffn_hidden), m.gated,
                                              static_cast<uint32_t>(m.dtype_bytes)));
}

gpu::KernelSpec SharedKernels::scaling(int g, uint64_t tokens) const {
  return scaling(g, tokens, static_cast<uint64_t>(cluster_.model().top_k()));
}

gpu::KernelSpec SharedKernels::scaling(int g, uint64_t tokens, uint64_t rows_per_token) const {
  const ModelShape& m = cluster_.model();
  return memory(g, "scaling",
                gpu::memory_bytes::scaling(tokens, rows_per_token, static_cast<uint64_t>(m.hidden),
                                           static_cast<uint32_t>(m.dtype_bytes), kWeightBytes));
}

gpu::KernelSpec SharedKernels::permute(int g, uint64_t rows, std::string name) const {
  const ModelShape& m = cluster_.model();
  return memory(g, std::move(name),
                gpu::memory_bytes::permute(rows, static_cast<uint64_t>(m.hidden), static_cast<uint32_t>(m.dtype_bytes),
                                           kIndexBytes));
}

gpu::KernelSpec SharedKernels::memory(int g, std::string name, uint64_t bytes) const {
  return gpu::memory_kernel(cluster_.gpu(g), std::move(name), bytes, memory_shape_);
}

std::vector<uint64_t> SharedKernels::local_expert_rows(int g) const {
  const Workload& w = cluster_.workload();
  std::vector<uint64_t> rows;
  for (int64_t e : w.placement().local_experts(g)) {
    uint64_t sum = 0;
    for (int64_t src = 0; src < w.tokens().gpus(); ++src) sum += static_cast<uint64_t>(w.plan().rows_to_expert(src, e));
    rows.push_back(sum);
  }
  return rows;
}

std::vector<uint64_t> SharedKernels::local_expert_rows_from(int g, int src) const {
  const Workload& w = cluster_.workload();
  std::vector<uint64_t> rows;
  for (int64_t e : w.placement().local_experts(g)) rows.push_back(static_cast<uint64_t>(w.plan().rows_to_expert(src, e)));
  return rows;
}

Time SharedKernels::roofline(const OpCost& cost) const {
  const gpu::GpuConfig& c = cluster_.gpu_config();
  const uint64_t flops_per_s = c.sm_tensor_flops_per_second() * c.sm_count;
  const Time compute = Time::from_ps(static_cast<int64_t>(
      (static_cast<unsigned __int128>(cost.flops) * 1000000000000ULL + flops_per_s - 1) / flops_per_s));
  const Time memory = c.hbm_achievable().transfer_time(cost.bytes);
  return max(compute, memory);
}

}  // namespace moehub
