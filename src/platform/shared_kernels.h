#pragma once
// The kernels every system runs alike (paper VI-A: routing, expert GEMMs, activation, scaling
// and the attention around the MoE layer cost the same everywhere). Systems differ in what
// they add around them and in how the GEMMs' thread blocks wait for data.

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gemm.h"
#include "gpu/kernel.h"
#include "moe/layer_cost.h"
#include "platform/cluster.h"

namespace moehub {

class SharedKernels {
 public:
  explicit SharedKernels(Cluster& cluster);

  // The block of memory-bound kernels (permutes, activation, scaling, counts), from
  // kernels.memory_block_threads: systems size their own small kernels with it.
  const gpu::BlockShape& memory_shape() const { return memory_shape_; }

  // Gate GEMM (T x H by H x E) then softmax/top-k on GPU g's `tokens` tokens; logged as Routing.
  void launch_routing(int g, gpu::Stream& stream, int64_t tokens);
  // Grouped GEMM1 (rows_e x H by H x F1) over the local experts.
  // `active_rows`: rows each expert will really hold when the grid covers more (GemmProblem).
  gpu::GemmModel gemm1_model(const std::vector<uint64_t>& rows_per_expert,
                             const std::vector<uint64_t>& active_rows = {}) const;
  // Grouped GEMM2 (rows_e x F by F x H).
  gpu::GemmModel gemm2_model(const std::vector<uint64_t>& rows_per_expert) const;
  gpu::KernelSpec activation(int g, uint64_t rows) const;
  // Weighted sum of each token's k expert rows (k: the model's top-k, or `rows_per_token`
  // where a system sums another count, e.g. Megatron's k logical rows under EP+TP).
  gpu::KernelSpec scaling(int g, uint64_t tokens) const;
  gpu::KernelSpec scaling(int g, uint64_t tokens, uint64_t rows_per_token) const;
  // Gather or scatter of `rows` rows (a data shuffle that exists only to order rows).
  gpu::KernelSpec permute(int g, uint64_t rows, std::string name) const;
  // A memory-bound kernel of `bytes`.
  gpu::KernelSpec memory(int g, std::string name, uint64_t bytes) const;

  // Rows GPU g's local experts receive from every GPU, per local expert.
  std::vector<uint64_t> local_expert_rows(int g) const;
  // Rows GPU g's local experts receive from GPU src, per local expert.
  std::vector<uint64_t> local_expert_rows_from(int g, int src) const;

  // Roofline time of work outside the MoE layer (attention, shared experts, dense FFN):
  // max(FLOPs at the tensor peak x gemm efficiency, bytes at achievable HBM bandwidth).
  Time roofline(const OpCost& cost) const;

 private:
  Cluster& cluster_;
  gpu::BlockShape memory_shape_;
};

}  // namespace moehub
