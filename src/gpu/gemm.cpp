#include "gpu/gemm.h"

#include <algorithm>
#include <fmt/format.h>
#include <memory>

#include "sim/bandwidth.h"
#include "sim/error.h"

namespace moehub::gpu {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

class GemmProgram final : public BlockProgram {
 public:
  GemmProgram(GemmModel model, GemmHooks hooks) : model_(std::move(model)), hooks_(std::move(hooks)) {}

  // `user` remembers whether the block began with a hook step (then the math is step 1).
  Step next(BlockState& b) override {
    const GemmTile t = model_.tile(b.block);
    if (b.step == 0 && hooks_.before) {
      if (std::optional<Step> first = hooks_.before(t)) {
        b.user = 1;
        return *first;
      }
    }
    if (b.step == b.user) return Step::compute_memory(t.compute, t.hbm_bytes);
    if (!hooks_.after) return Step::done();
    return hooks_.after(t, static_cast<uint32_t>(b.step - b.user - 1));
  }

 private:
  GemmModel model_;
  GemmHooks hooks_;
};

// Inverts the tile model on one measurement: with every tile at efficiency e, a shape of T
// tiles on S slots takes ceil(T / S) waves of tile_flops / (peak x e), or its compulsory HBM
// traffic over the achievable bandwidth if that is longer. When the memory time alone reaches
// the measured time, the measurement says nothing about the tensor cores and the datasheet
// peak stands (1); so it does when the measurement is faster than even the peak allows.
// Otherwise e is the one whose compute time equals the measured time.
double calibrated_efficiency(const GpuConfig& gpu, const GemmMeasurement& p) {
  GpuConfig plain = gpu;
  plain.gemm_calibration = nullptr;
  const GemmModel shape(plain, GemmProblem{std::vector<uint64_t>(p.groups, p.m), p.n, p.k, 2});  // measured in bf16
  const double memory_seconds =
      static_cast<double>(shape.hbm_bytes()) / static_cast<double>(gpu.hbm_achievable().bytes_per_second());
  if (memory_seconds >= p.time.seconds()) return 1.0;
  const double peak_seconds = static_cast<double>(shape.waves()) * static_cast<double>(shape.tile_flops()) /
                              static_cast<double>(gpu.sm_tensor_peak_flops_per_second());
  return std::clamp(peak_seconds / p.time.seconds(), 1e-6, 1.0);
}

uint64_t scaled(uint64_t value, double fraction) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(value) * fraction));
}

}  // namespace

GemmModel::GemmModel(const GpuConfig& gpu, GemmProblem problem)
    : tile_(gpu.gemm_tile),
      problem_(std::move(problem)),
      efficiency_(gpu.gemm_efficiency),
      calibration_(gpu.gemm_calibration),
      sm_flops_per_second_(gpu.sm_tensor_flops_per_second()),
      threads_(gpu.gemm_threads_per_block),
      blocks_per_sm_(gpu.gemm_blocks_per_sm),
      // The mainloop's shared-memory pipeline fills the SM (that is why gpu.gemm_blocks_per_sm
      // is 1): a GEMM block's footprint is the SM's share per GEMM block, so blocks of two
      // GEMM kernels (TE's per-expert GEMMs on several streams) do not share an SM.
      shared_memory_(gpu.gemm_blocks_per_sm ? gpu.shared_memory_per_sm / gpu.gemm_blocks_per_sm : 0),
      slots_(std::max<uint64_t>(1, static_cast<uint64_t>(gpu.sm_count) * gpu.gemm_blocks_per_sm)) {
  if (tile_.m == 0) throw UserError("gpu.gemm_tile_m", "must be at least 1");
  if (tile_.n == 0) throw UserError("gpu.gemm_tile_n", "must be at least 1");
  if (tile_.k == 0) throw UserError("gpu.gemm_tile_k", "must be at least 1");
  if (problem_.n == 0) throw UserError("gemm.n", "must be at least 1");
  if (problem_.k == 0) throw UserError("gemm.k", "must be at least 1");
  if (problem_.element_bytes == 0) throw UserError("gemm.element_bytes", "must be at least 1");
  if (problem_.group_rows.empty()) throw UserError("gemm.groups", "must be at least 1");
  if (calibration_) {
    // Matched on the groups that have rows, at their mean row count: the rows that will run,
    // not a capacity-sized grid's (its empty M-tiles retire unrun), or a region sized for every
    // token would borrow the efficiency of a larger measured shape.
    uint64_t groups = 0, rows = 0;
    for (size_t i = 0; i < problem_.group_rows.size(); ++i) {
      const uint64_t m = problem_.group_rows[i];
      const uint64_t run = problem_.active_rows.empty() ? m : std::min(m, problem_.active_rows[i]);
      groups += run > 0 ? 1 : 0;
      rows += run;
    }
    if (groups > 0) {
      calibration_point_ = &calibration_->nearest(groups, std::max<uint64_t>(1, rows / groups), problem_.n, problem_.k);
      efficiency_ = calibrated_efficiency(gpu, *calibration_point_);
      sm_flops_per_second_ = scaled(gpu.sm_tensor_peak_flops_per_second(), efficiency_);
    }
  }
  if (sm_flops_per_second_ == 0) throw UserError("gpu.gemm_efficiency", "leaves no tensor throughput");
  k_padded_ = ceil_div(problem_.k, tile_.k) * tile_.k;
  tiles_n_ = ceil_div(problem_.n, tile_.n);
  tile_offsets_.reserve(problem_.group_rows.size() + 1);
  tile_offsets_.push_back(0);
  for (const uint64_t m : problem_.group_rows) tile_offsets_.push_back(tile_offsets_.back() + ceil_div(m, tile_.m) * tiles_n_);
  if (tiles() > UINT32_MAX) throw UserError("gemm", fmt::format("{} tiles exceed one grid", tiles()));
}

GemmTile GemmModel::tile(uint64_t index) const {
  if (index >= tiles()) throw std::logic_error("GemmModel::tile: index out of range");
  const auto it = std::upper_bound(tile_offsets_.begin(), tile_offsets_.end(), index);
  const auto group = static_cast<uint32_t>(it - tile_offsets_.begin() - 1);
  const uint64_t local = index - tile_offsets_[group];
  const uint64_t m = problem_.group_rows[group];
  const uint64_t active = problem_.active_rows.empty() ? m : std::min(m, problem_.active_rows[group]);
  const uint64_t tiles_m = std::max<uint64_t>(1, ceil_div(active, tile_.m));  // M-tiles that run
  const uint64_t e = problem_.element_bytes;
  const uint64_t k = problem_.k;

  GemmTile t;
  t.index = index;
  t.group = group;
  t.tile_row = local / tiles_n_;
  t.tile_col = local % tiles_n_;
  t.rows = std::min<uint64_t>(tile_.m, m - t.tile_row * tile_.m);
  t.cols = std::min<uint64_t>(tile_.n, problem_.n - t.tile_col * tile_.n);
  t.flops = tile_flops();
  // Compulsory traffic shared out: the tile's A rows are read once for the tiles_n tiles of
  // its row, its B columns once for the tiles_m tiles of its column that run, its C part
  // written once.
  t.hbm_bytes = ceil_div(t.rows * k * e, tiles_n_) + ceil_div(k * t.cols * e, tiles_m) + t.rows * t.cols * e;
  // FLOPs over FLOP/s with the same integer ceiling as bytes over bytes/s.
  t.compute = Bandwidth::bytes_per_second(sm_flops_per_second_).transfer_time(t.flops);
  return t;
}

uint64_t GemmModel::hbm_bytes() const {
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < tiles(); ++i) bytes += tile(i).hbm_bytes;
  return bytes;
}

uint64_t GemmModel::useful_flops() const {
  uint64_t rows = 0;
  for (const uint64_t m : problem_.group_rows) rows += m;
  return 2 * rows * problem_.n * problem_.k;
}

BlockShape GemmModel::block_shape() const {
  BlockShape s;
  s.threads = threads_;
  s.max_blocks_per_sm = blocks_per_sm_;
  s.shared_memory = shared_memory_;
  return s;
}

KernelSpec GemmModel::kernel(std::string name, GemmHooks hooks) const {
  KernelSpec spec;
  spec.name = std::move(name);
  spec.blocks = static_cast<uint32_t>(tiles());
  spec.shape = block_shape();
  spec.program = std::make_shared<GemmProgram>(*this, std::move(hooks));
  return spec;
}

}  // namespace moehub::gpu
