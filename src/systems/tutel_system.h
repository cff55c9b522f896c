#pragma once
// Tutel's configuration and its adaptive pipelining rule (src/systems/tutel.cpp).

#include <cstdint>

#include "config/config.h"
#include "gpu/gpu_config.h"
#include "moe/model_shape.h"
#include "systems/nccl_group_call.h"

namespace moehub {

struct TutelConfig {
  double capacity_factor = 1.0;  // systems.tutel.capacity_factor
  int overlap_degree = 0;        // systems.tutel.overlap_degree; 0 = adaptive
  NcclKernelShape nccl;          // systems.tutel.nccl_cta_threads
  static TutelConfig from(const Config& config);
};

// "adaptive": the largest degree in {1, 2, 4, 8} whose chunk's GEMM1 (local experts x
// gpus x capacity/degree rows) still has at least one full wave of tiles (sm_count x
// gemm_blocks_per_sm); 1 if none does. Smaller chunks overlap more but leave SMs idle.
int tutel_adaptive_degree(const gpu::GpuConfig& gpu, const ModelShape& model, int64_t gpus, int64_t local_experts,
                          double capacity_factor, int64_t tokens_per_gpu,
                          int64_t max_rows_per_source_expert);

}  // namespace moehub
