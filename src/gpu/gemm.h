#pragma once
// GEMM and grouped GEMM as CUTLASS-style tiles: one thread block per BM x BN output tile,
// K padded to a multiple of BK. A tile's tensor work is the padded tile (2 x BM x BN x K_pad
// FLOPs, whatever the valid rows), at one SM's tensor throughput times gpu.gemm_efficiency;
// its memory traffic overlaps the tensor work (a pipelined mainloop) and is its share of the
// GEMM's compulsory HBM traffic: A and B are read once and C written once, the panel reuse
// between concurrent tiles being caught by L2 (assumption; see docs/gpu.md). Padding and wave
// quantisation follow from the tile count and the dispatcher; nothing is a fudge factor.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/block_program.h"
#include "gpu/gpu_config.h"
#include "gpu/kernel.h"
#include "sim/time.h"

namespace moehub::gpu {

// C[m_g x n] = A[m_g x k] x B_g[k x n] for every group g (an expert with m_g rows); a plain
// GEMM is one group. Groups with no rows have no tiles.
struct GemmProblem {
  GemmProblem() = default;
  GemmProblem(std::vector<uint64_t> rows, uint64_t n_, uint64_t k_, uint32_t bytes = 2, std::vector<uint64_t> active = {})
      : group_rows(std::move(rows)), n(n_), k(k_), element_bytes(bytes), active_rows(std::move(active)) {}

  std::vector<uint64_t> group_rows;
  uint64_t n = 0;
  uint64_t k = 0;
  uint32_t element_bytes = 2;  // bf16
  // Rows that will be present in each group when the grid covers more (a capacity-sized
  // region whose empty M-tiles are retired unrun): a weight panel is read once by the M-tiles
  // that run, so its traffic is shared among those. Empty: every row of group_rows.
  std::vector<uint64_t> active_rows;
};

// One tile: the work of one thread block.
struct GemmTile {
  uint64_t index = 0;  // in the grid: group-major, then tile row, then tile column
  uint32_t group = 0;
  uint64_t tile_row = 0;
  uint64_t tile_col = 0;
  uint64_t rows = 0;   // valid rows (<= BM)
  uint64_t cols = 0;   // valid columns (<= BN)
  uint64_t flops = 0;  // executed, padded
  uint64_t hbm_bytes = 0;
  Time compute;
};

// Optional extra steps around each tile, for systems that gate tiles on data (a poll or
// hardware wait, or a gate the DAM releases) or push results from the epilogue.
struct GemmHooks {
  // The tile's first step, if any (e.g. Step::wait(...) or Step::gate()).
  std::function<std::optional<Step>(const GemmTile&)> before;
  // Epilogue step `i` (0, 1, ...) after the tile's math; return Step::done() to end.
  std::function<Step(const GemmTile&, uint32_t i)> after;
};

class GemmModel {
 public:
  // Throws UserError naming the tile key (gpu.gemm_tile_*) or the problem field for bad sizes.
  GemmModel(const GpuConfig& gpu, GemmProblem problem);

  uint64_t tiles() const { return tile_offsets_.back(); }
  GemmTile tile(uint64_t index) const;
  // 2 x sum(m_g) x n x k: the FLOPs the problem asks for (without padding).
  uint64_t useful_flops() const;
  uint64_t padded_k() const { return k_padded_; }
  // 2 x BM x BN x K_pad: the FLOPs every tile executes (padding included).
  uint64_t tile_flops() const { return 2ULL * tile_.m * tile_.n * k_padded_; }
  // The compulsory HBM traffic of the whole problem (the tiles' shares summed).
  uint64_t hbm_bytes() const;
  // Full rounds of tiles over every SM's GEMM slots (sm_count x gpu.gemm_blocks_per_sm).
  uint64_t waves() const { return (tiles() + slots_ - 1) / slots_; }
  // Fraction of tensor peak each tile runs at: gpu.gemm_efficiency, or with a calibration the
  // efficiency that makes the tile model reproduce the nearest measured shape's time.
  double efficiency() const { return efficiency_; }
  // The measurement behind efficiency() (null without a calibration).
  const GemmMeasurement* calibration_point() const { return calibration_point_; }
  const GemmProblem& problem() const { return problem_; }
  BlockShape block_shape() const;

  // One thread block per tile. The returned spec shares this model's data (copied in).
  KernelSpec kernel(std::string name, GemmHooks hooks = {}) const;

 private:
  GemmTileShape tile_;
  GemmProblem problem_;
  double efficiency_;
  const GemmMeasurement* calibration_point_ = nullptr;
  std::shared_ptr<const GemmCalibration> calibration_;  // keeps calibration_point_ alive
  uint64_t sm_flops_per_second_;
  uint32_t threads_;
  uint32_t blocks_per_sm_;
  uint64_t shared_memory_;  // per block
  uint64_t slots_;
  uint64_t k_padded_;
  uint64_t tiles_n_;
  std::vector<uint64_t> tile_offsets_;  // first tile of each group; back() = total
};

}  // namespace moehub::gpu
