// GEMM and grouped GEMM: tiles, padding, waves, hand-computed end times.

#include "gpu/gemm.h"

#include <gtest/gtest.h>

#include "gpu/gpu.h"
#include "gpu_test_support.h"
#include "sim/error.h"

namespace moehub::gpu {
namespace {

using testing::h800;
using testing::kLaunchGapPs;
using testing::kTile4096Ps;

struct GemmRun {
  Time start, end;
};

// Launches the problem on an idle GPU's stream at t = 0 and runs to completion.
GemmRun run_gemm(const GemmProblem& p, GpuConfig cfg = h800()) {
  Simulator sim;
  Gpu gpu(sim, cfg);
  GemmModel model(gpu.config(), p);
  const KernelId id = gpu.create_stream("s").launch(model.kernel("gemm"));
  sim.run();
  const KernelTimes& t = gpu.kernel_times(id);
  return {*t.started, *t.ended};
}

TEST(Gemm, SingleGemmEndsAtTheHandComputedPicosecond) {
  // 256 x 256 x 4096: 2 x 2 tiles of 128 x 128, each 2 x 128 x 128 x 4096 = 134217728 FLOPs
  // at 4096 FLOP/clk x 1.83 GHz x 0.70 = 5.246976e12 FLOP/s -> ceil(134217728e12 / 5.246976e12)
  // = 25580016 ps. Four tiles run at once on four SMs; their operand traffic (4 x 1081344 B
  // through 2.9145e12 B/s, ~1.5 us) hides under the tensor work. The kernel starts after the
  // 1.5 us launch gap.
  const GemmRun r = run_gemm({{256}, 256, 4096});
  EXPECT_EQ(r.start.ps(), kLaunchGapPs);
  EXPECT_EQ(r.end.ps(), kLaunchGapPs + kTile4096Ps);
  EXPECT_EQ(r.end.ps(), 27080016);
}

TEST(Gemm, TileCostsAndTraffic) {
  GemmModel m(h800(), {{256}, 256, 4096});
  ASSERT_EQ(m.tiles(), 4u);
  const GemmTile t = m.tile(3);
  EXPECT_EQ(t.tile_row, 1u);
  EXPECT_EQ(t.tile_col, 1u);
  EXPECT_EQ(t.flops, 134217728u);
  EXPECT_EQ(t.compute.ps(), kTile4096Ps);
  // A: 128 x 4096 x 2 B shared by 2 column tiles; B: 4096 x 128 x 2 B shared by 2 row tiles;
  // C: 128 x 128 x 2 B.
  EXPECT_EQ(t.hbm_bytes, 524288u + 524288u + 32768u);
  EXPECT_EQ(m.useful_flops(), 2ull * 256 * 256 * 4096);
}

// A capacity-sized grid (256 rows) over an expert that holds 100: only its first M-tile runs,
// so that tile reads the whole weight panel (4096 x 128 x 2 B) instead of half of it.
TEST(Gemm, WeightsAreSharedAmongTheMTilesThatRun) {
  GemmProblem p{{256}, 256, 4096};
  p.active_rows = {100};
  GemmModel m(h800(), p);
  ASSERT_EQ(m.tiles(), 4u);  // the grid still covers the capacity
  EXPECT_EQ(m.tile(1).hbm_bytes, 524288u + 1048576u + 32768u);
  GemmModel all(h800(), {{256}, 256, 4096});
  EXPECT_EQ(all.tile(1).hbm_bytes, 524288u + 524288u + 32768u);
}

TEST(Gemm, KIsPaddedToTheKStep) {
  GemmModel m(h800(), {{128}, 128, 100});  // K = 100 runs as 128
  EXPECT_EQ(m.padded_k(), 128u);
  EXPECT_EQ(m.tile(0).flops, 2ull * 128 * 128 * 128);
}

TEST(Gemm, ExpertWithOneRowCostsTheSameTileAsOneWith128) {
  const GemmRun one = run_gemm({{1}, 128, 4096});
  const GemmRun full = run_gemm({{128}, 128, 4096});
  EXPECT_EQ(one.end - one.start, full.end - full.start);
  EXPECT_EQ((one.end - one.start).ps(), kTile4096Ps);
  GemmModel m(h800(), {{1, 128}, 128, 4096});
  ASSERT_EQ(m.tiles(), 2u);
  EXPECT_EQ(m.tile(0).rows, 1u);
  EXPECT_EQ(m.tile(1).rows, 128u);
  EXPECT_EQ(m.tile(0).flops, m.tile(1).flops);
  EXPECT_EQ(m.tile(0).compute, m.tile(1).compute);
  EXPECT_LT(m.tile(0).hbm_bytes, m.tile(1).hbm_bytes);  // fewer A rows and C rows to move
  // As a grouped GEMM, both experts' tiles run side by side and end together.
  const GemmRun grouped = run_gemm({{1, 128}, 128, 4096});
  EXPECT_EQ((grouped.end - grouped.start).ps(), kTile4096Ps);
}

TEST(Gemm, PartialTilesArePaddedNotScaled) {
  // 129 rows need two tile rows; the second holds one valid row but costs a full tile.
  GemmModel m(h800(), {{129}, 128, 4096});
  EXPECT_EQ(m.tiles(), 2u);
  EXPECT_EQ(m.tile(1).rows, 1u);
  EXPECT_EQ(m.tile(1).flops, m.tile(0).flops);
}

TEST(Gemm, OneHundredThirtyThreeTilesOn132SmsTakeTwoWaves) {
  // 896 x 2432 = 7 x 19 = 133 tiles, one resident per SM. Each tile moves
  // ceil(128*4096*2/19) + ceil(4096*128*2/7) + 128*128*2 = 237754 B; 132 of them through
  // 2.9145e12 B/s take ~10.8 us, less than the 25.58 us of tensor work, so each wave lasts
  // exactly one tile time and the 133rd tile starts when the first wave ends.
  GemmModel m(h800(), {{896}, 2432, 4096});
  ASSERT_EQ(m.tiles(), 133u);
  EXPECT_EQ(m.tile(0).hbm_bytes, 237754u);
  const GemmRun r = run_gemm({{896}, 2432, 4096});
  EXPECT_EQ((r.end - r.start).ps(), 2 * kTile4096Ps);
  // 12 x 11 = 132 tiles fit in one wave.
  const GemmRun r132 = run_gemm({{12 * 128}, 11 * 128, 4096});
  EXPECT_EQ((r132.end - r132.start).ps(), kTile4096Ps);
}

TEST(Gemm, EmptyGroupsHaveNoTiles) {
  GemmModel m(h800(), {{0, 128, 0}, 256, 64});
  EXPECT_EQ(m.tiles(), 2u);
  EXPECT_EQ(m.tile(0).group, 1u);
  EXPECT_EQ(m.tile(1).group, 1u);
  const GemmRun r = run_gemm({{0, 0}, 256, 64});
  EXPECT_EQ(r.end, r.start);  // a grid of no blocks completes as it starts
}

TEST(Gemm, MemoryBoundShapeIsLimitedByTraffic) {
  // One row against an 8192 x 131072 weight: 1024 tiles, each reading its 8192 x 128 x 2 B
  // slice of B (2 MiB). Tensor work: 8 waves (1024 / 132 SMs) of 51.16 us = 409 us. Traffic:
  // 2.15 GB through 2.9145e12 B/s = 737 us. Memory sharing, not tensor time, decides.
  GemmModel m(h800(), {{1}, 131072, 8192});
  ASSERT_EQ(m.tiles(), 1024u);
  EXPECT_EQ(m.tile(0).hbm_bytes, 16u + 2097152u + 256u);
  const Time traffic = h800().hbm_achievable().transfer_time(m.tile(0).hbm_bytes * m.tiles());
  EXPECT_GT(traffic, m.tile(0).compute * 8);
  const GemmRun r = run_gemm({{1}, 131072, 8192});
  EXPECT_GE(r.end - r.start, traffic);
  EXPECT_LT(r.end - r.start, traffic + m.tile(0).compute);
}

TEST(Gemm, BadSizesNameTheKey) {
  GpuConfig cfg = h800();
  cfg.gemm_tile.m = 0;
  try {
    GemmModel m(cfg, {{128}, 128, 128});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "gpu.gemm_tile_m");
  }
  cfg = h800();
  cfg.gemm_tile.k = 0;
  EXPECT_THROW(GemmModel(cfg, {{128}, 128, 128}), UserError);
  try {
    GemmModel m(h800(), {{128}, 0, 128});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "gemm.n");
  }
  try {
    GemmModel m(h800(), {{128}, 128, 0});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "gemm.k");
  }
}

}  // namespace
}  // namespace moehub::gpu
