#pragma once
// Tutel's configuration and its adaptive pipelining rule (src/systems/tutel/tutel.cpp).

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "gpu/gpu_config.h"
#include "moe/model_shape.h"
#include "sim/bandwidth.h"
#include "platform/nccl_group_call.h"

namespace moehub {

struct TutelConfig {
  double capacity_factor = 1.0;  // systems.tutel.capacity_factor
  int overlap_degree = 1;        // systems.tutel.overlap_degree; 0 = adaptive
  std::string expert_ffn = "plain";  // systems.tutel.expert_ffn: "plain" (fc1, act, fc2) or "model" (the preset's)
  std::string a2a_algo = "linear";  // systems.tutel.a2a_algo: "linear" or "2dh" (tutel_2dh.h)
  // systems.tutel.parallel_type: "adaptive:1" (Tutel's default) or "model" (expert TP with E < N;
  // docs/research/tutel-model-parallel.md)
  std::string parallel_type = "adaptive:1";
  NcclKernelShape nccl;          // systems.tutel.nccl_cta_threads
  static TutelConfig from(const Config& config);
  static void declare(ParamRegistry& registry);
};

// Why tutel does not run this configuration's parallel.tp (> 1), as the whole reason of the
// refusal; empty when it does: parallel_type "model" with E < N and parallel.tp = N / E.
std::string tutel_tp_refusal(const Config& config);

// "adaptive": Tutel searches its pipelining degree at run time and keeps the fastest; this
// stands in for that search with an estimate. For each d in {1, 2, 4, 8}, a chunk's expert
// work f (GEMM1 and GEMM2 of local experts x gpus x capacity/d rows: tile waves vs operand
// bytes over HBM, whichever is longer) and its NVLink time c (the chunk's bytes to the other
// GPUs over `link_bandwidth`, once out for the scatter and once for the gather) form a
// three-stage pipeline, T(d) = 2c + f + (d - 1) max(2c, f), plus nine launch
// gaps per chunk (its kernels). The smallest T wins; ties keep the smaller d.
struct TutelDegreeEstimate {
  int degree = 1;
  double seconds = 0;
};
std::vector<TutelDegreeEstimate> tutel_degree_estimates(const gpu::GpuConfig& gpu, const ModelShape& model, int64_t gpus,
                                                        int64_t local_experts, double capacity_factor,
                                                        int64_t tokens_per_gpu, int64_t max_rows_per_source_expert,
                                                        Bandwidth link_bandwidth);
int tutel_adaptive_degree(const gpu::GpuConfig& gpu, const ModelShape& model, int64_t gpus, int64_t local_experts,
                          double capacity_factor, int64_t tokens_per_gpu, int64_t max_rows_per_source_expert,
                          Bandwidth link_bandwidth);

}  // namespace moehub
