// Tutel's overlap-degree estimate (tutel_system.h), the "adaptive" stand-in for its run-time
// search (docs/systems/tutel.md).
#include <algorithm>
#include <limits>

#include "gpu/gemm.h"
#include "systems/tutel/tutel_capacity.h"
#include "systems/tutel/tutel_system.h"

namespace moehub {

namespace {

uint64_t du(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace

std::vector<TutelDegreeEstimate> tutel_degree_estimates(const gpu::GpuConfig& gpu, const ModelShape& m, int64_t gpus,
                                                        int64_t local_experts, double cf, int64_t tokens_per_gpu,
                                                        int64_t max_rows, Bandwidth link_bandwidth) {
  // scatter all-to-all, permute, GEMM1, bias add, activation, GEMM2, bias add, permute back,
  // gather all-to-all
  constexpr int kernels_per_chunk = 9;
  const double hbm = static_cast<double>(gpu.hbm_achievable().bytes_per_second());
  // One GEMM alone on the GPU: its tile waves (every tile takes the same time) or its operand
  // traffic, whichever is longer.
  const auto gemm_seconds = [&](uint64_t groups, uint64_t rows, uint64_t n, uint64_t k) {
    const gpu::GemmModel g(gpu, gpu::GemmProblem{std::vector<uint64_t>(groups, rows), n, k, static_cast<uint32_t>(m.dtype_bytes)});
    return std::max(static_cast<double>(g.waves()) * g.tile(0).compute.seconds(),
                    static_cast<double>(g.hbm_bytes()) / hbm);
  };
  std::vector<TutelDegreeEstimate> out;
  for (int d : {1, 2, 4, 8}) {
    const int64_t cap = tutel_capacity(cf, tokens_per_gpu, m.experts(), m.top_k(), max_rows, d);
    const int64_t rows = gpus * cap / d;
    if (local_experts < 1 || rows < 1) break;
    const double f = gemm_seconds(du(local_experts), du(rows), du(m.gemm1_cols()), du(m.hidden)) +
                     gemm_seconds(du(local_experts), du(rows), du(m.hidden), du(m.ffn_hidden));
    const double chunk_bytes = static_cast<double>((gpus - 1) * local_experts * (cap / d) * m.row_bytes());
    const double c = chunk_bytes / static_cast<double>(link_bandwidth.bytes_per_second());
    const double t = 2 * c + f + (d - 1) * std::max(2 * c, f) + d * kernels_per_chunk * gpu.launch_gap.seconds();
    out.push_back({d, t});
  }
  return out;
}

int tutel_adaptive_degree(const gpu::GpuConfig& gpu, const ModelShape& m, int64_t gpus, int64_t local_experts, double cf,
                          int64_t tokens_per_gpu, int64_t max_rows, Bandwidth link_bandwidth) {
  int best = 1;
  double best_t = std::numeric_limits<double>::infinity();
  for (const TutelDegreeEstimate& e :
       tutel_degree_estimates(gpu, m, gpus, local_experts, cf, tokens_per_gpu, max_rows, link_bandwidth)) {
    if (e.seconds < best_t) {
      best_t = e.seconds;
      best = e.degree;
    }
  }
  return best;
}

}  // namespace moehub
