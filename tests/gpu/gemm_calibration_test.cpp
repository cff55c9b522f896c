// Calibrated GEMM mode: efficiencies come from measured shapes by inverting the tile model,
// the nearest shape is picked in log space, and bad calibration files name file:line.

#include "gpu/gemm_calibration.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/preset_catalog.h"
#include "gpu/gemm.h"
#include "gpu/gpu.h"
#include "gpu/gpu_params.h"
#include "gpu_test_support.h"
#include "hub/hub_params.h"
#include "net/net_params.h"
#include "sim/error.h"

namespace moehub::gpu {
namespace {

// A calibration file in the test's temporary folder, removed afterwards.
class CalibrationFile {
 public:
  explicit CalibrationFile(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("moehub-calibration-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".toml");
    std::ofstream(path_) << text;
  }
  ~CalibrationFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

GpuConfig calibrated(const std::string& file) {
  GpuConfig g = testing::h800();
  g.gemm_calibration = std::make_shared<const GemmCalibration>(GemmCalibration::load(file));
  return g;
}

TEST(GemmCalibration, EfficiencyReproducesTheMeasuredTimeOfTheSameShape) {
  // 8192^3 on the H800 tile model: 64 x 64 = 4096 tiles of 128 x 128 on 132 SMs = 32 waves,
  // each tile 2 x 128 x 128 x 8192 = 268435456 FLOPs. At the 4096 FLOP/clk x 1.83 GHz peak
  // that is 32 x 268435456 / 7.49568e12 s = 1145.98 us; measured 2000 us -> e = 0.57299.
  CalibrationFile f("[[gemm]]\nm = 8192\nn = 8192\nk = 8192\ntime_us = 2000.0\ntflops = 549.8\n");
  const GpuConfig g = calibrated(f.path());
  const GemmModel model(g, {{8192}, 8192, 8192});
  const double expected = 32.0 * 268435456.0 / 7.49568e12 / 2000e-6;
  EXPECT_NEAR(model.efficiency(), expected, 1e-12);
  ASSERT_NE(model.calibration_point(), nullptr);
  EXPECT_EQ(model.calibration_point()->line, 1);

  // Simulated on an idle GPU, the GEMM takes the measured 2000 us (32 waves of one tile each,
  // tile times rounded up to the picosecond) after the launch gap.
  Simulator sim;
  Gpu gpu(sim, g);
  const KernelId id = gpu.create_stream("s").launch(model.kernel("gemm"));
  sim.run();
  const KernelTimes& t = gpu.kernel_times(id);
  EXPECT_NEAR((*t.ended - *t.started).us(), 2000.0, 1e-3);
}

TEST(GemmCalibration, AMeasurementFasterThanPeakKeepsThePeak) {
  CalibrationFile f("[[gemm]]\nm = 8192\nn = 8192\nk = 8192\ntime_us = 100.0\n");
  EXPECT_DOUBLE_EQ(GemmModel(calibrated(f.path()), {{8192}, 8192, 8192}).efficiency(), 1.0);
}

TEST(GemmCalibration, AMemoryBoundMeasurementKeepsThePeak) {
  // 8 experts x 16 rows x 28672 x 4096 stream 8 x (16 x 4096 + 4096 x 28672 + 16 x 28672) x 2 B
  // = 1.88 GB of operands: 645 us at 2.9145e12 B/s. Measured in 600 us, the weights bound it;
  // the tensor cores (14 waves x 134 MFLOP tiles = 250 us at peak) are not what it measures, so
  // it must not turn into an efficiency of 250 / 600 = 0.42 for compute-bound neighbours.
  CalibrationFile f("[[grouped_gemm]]\ngroups = 8\nm_per_group = 16\nn = 28672\nk = 4096\ntime_us = 600.0\n");
  EXPECT_DOUBLE_EQ(GemmModel(calibrated(f.path()), {std::vector<uint64_t>(8, 16), 28672, 4096}).efficiency(), 1.0);
}

TEST(GemmCalibration, NearestShapePrefersItsKindThenLogDistance) {
  CalibrationFile f(
      "[[gemm]]\nm = 128\nn = 4096\nk = 4096\ntime_us = 20.0\n"
      "[[gemm]]\nm = 8192\nn = 4096\nk = 4096\ntime_us = 400.0\n"
      "[[grouped_gemm]]\ngroups = 8\nm_per_group = 128\nn = 28672\nk = 4096\nmethod = \"bmm\"\ntime_us = 900.0\n");
  const GemmCalibration c = GemmCalibration::load(f.path());
  ASSERT_EQ(c.points().size(), 3u);
  EXPECT_EQ(c.nearest(1, 300, 4096, 4096).m, 128u);    // ln(300/128) < ln(8192/300)
  EXPECT_EQ(c.nearest(1, 4000, 4096, 4096).m, 8192u);
  EXPECT_EQ(c.nearest(8, 128, 4096, 4096).groups, 8u);  // grouped problems match grouped shapes
  // A grouped problem with only one expert holding rows is matched as a plain GEMM.
  const GemmModel one(calibrated(f.path()), {{0, 0, 300}, 4096, 4096});
  ASSERT_NE(one.calibration_point(), nullptr);
  EXPECT_EQ(one.calibration_point()->m, 128u);
  EXPECT_EQ(one.calibration_point()->groups, 1u);
}

// Kernel time of a GEMM alone on an idle GPU, first block to last.
double simulated_us(const GpuConfig& g, const GemmModel& model) {
  Simulator sim;
  Gpu gpu(sim, g);
  const KernelId id = gpu.create_stream("s").launch(model.kernel("gemm"));
  sim.run();
  const KernelTimes& t = gpu.kernel_times(id);
  return (*t.ended - *t.started).us();
}

// Per-SM peak 4096 x 1.83e9 = 7.49568e12 FLOP/s; a 128 x 128 tile over K is 2 x 128 x 128 x K FLOPs.
constexpr double kSmPeak = 7.49568e12;
double tile_seconds(double k, double e) { return 2.0 * 128 * 128 * k / (kSmPeak * e); }

TEST(GemmCalibration, ShapesBeyondTheTableRunAtTheBoundaryPointsTileEfficiency) {
  // 4096^3: 32 x 32 = 1024 tiles = 8 waves on 132 SMs; 8 x 134217728 / 7.49568e12 = 143.25 us
  // at peak, measured 180 us -> e = 0.79582. Its operands (3 x 32 MiB) stream in 34.5 us: compute.
  CalibrationFile f("[[gemm]]\nm = 256\nn = 256\nk = 256\ntime_us = 6.5\n"
                    "[[gemm]]\nm = 4096\nn = 4096\nk = 4096\ntime_us = 180.0\n");
  const GpuConfig g = calibrated(f.path());
  const double e = 8 * tile_seconds(4096, 1.0) / 180e-6;
  // Mixtral's GEMM2 at 8192 rows lies past the table in m and k and n: 64 x 224 = 14336 tiles
  // = 109 waves of K = 14336 tiles, each at the 4096^3 point's efficiency.
  const GemmModel big(g, {{8192}, 28672, 14336});
  ASSERT_NE(big.calibration_point(), nullptr);
  EXPECT_EQ(big.calibration_point()->m, 4096u);
  EXPECT_NEAR(big.efficiency(), e, 1e-12);
  EXPECT_EQ(big.waves(), 109u);
  EXPECT_NEAR(simulated_us(g, big), 109 * tile_seconds(14336, e) * 1e6, 0.01);
}

TEST(GemmCalibration, MoreGroupsThanMeasuredTakeTheNearestGroupCountsEfficiency) {
  // 4 x 512 x 2048 x 2048: 4 x 4 x 16 = 256 tiles = 2 waves, 2 x 8.953 us at peak, measured
  // 27.3 us -> e = 0.65597 (operands 50 MB stream in 17.3 us: compute-bound).
  CalibrationFile f("[[grouped_gemm]]\ngroups = 2\nm_per_group = 512\nn = 2048\nk = 2048\ntime_us = 16.4\n"
                    "[[grouped_gemm]]\ngroups = 4\nm_per_group = 512\nn = 2048\nk = 2048\ntime_us = 27.3\n"
                    "[[gemm]]\nm = 512\nn = 2048\nk = 2048\ntime_us = 12.5\n");
  const GpuConfig g = calibrated(f.path());
  const double e4 = 2 * tile_seconds(2048, 1.0) / 27.3e-6;
  // Eight local experts (Qwen2-MoE on 8 GPUs): ln(8/4)^2 < ln(8/2)^2, so the 4-group point;
  // 512 tiles = 4 waves: twice the measured 4-group time.
  const GemmModel eight(g, {std::vector<uint64_t>(8, 512), 2048, 2048});
  ASSERT_NE(eight.calibration_point(), nullptr);
  EXPECT_EQ(eight.calibration_point()->groups, 4u);
  EXPECT_NEAR(eight.efficiency(), e4, 1e-12);
  EXPECT_NEAR(simulated_us(g, eight), 4 * tile_seconds(2048, e4) * 1e6, 0.01);
  // One expert's own GEMM (TE's per-expert GEMMs) is a plain GEMM: the [[gemm]] point,
  // 64 tiles in one wave at e = 8.953 / 12.5.
  const GemmModel one(g, {{512}, 2048, 2048});
  EXPECT_EQ(one.calibration_point()->groups, 1u);
  EXPECT_NEAR(simulated_us(g, one), 12.5, 0.01);
}

TEST(GemmCalibration, ASmallExpertTakesTheMeasuredTimeOfTheSmallestMeasuredRows) {
  // 256 x 2048 x 2048: 2 x 16 = 32 tiles, one wave, measured 10.0 us (compute: its 10.5 MB of
  // operands stream in 3.6 us). A 16-row expert pads to one 128-row tile per column: 16 tiles,
  // still one wave of the same tiles, so the measured 10.0 us -- never more, never a fraction.
  CalibrationFile f("[[gemm]]\nm = 256\nn = 2048\nk = 2048\ntime_us = 10.0\n");
  const GpuConfig g = calibrated(f.path());
  EXPECT_NEAR(simulated_us(g, GemmModel(g, {{16}, 2048, 2048})), 10.0, 0.01);
  EXPECT_NEAR(simulated_us(g, GemmModel(g, {{256}, 2048, 2048})), 10.0, 0.01);
}

// A capacity-sized grid (MoE-Hub's regions: every token's worth of rows, empty M-tiles retired
// unrun) is matched on the rows that will run. Two experts of 512 rows in regions of 4096 rows:
// the 2 x 512 point (2 x 4 x 16 = 128 tiles, one wave: 8.953 us at peak over the measured
// 16.4 us), not the 2 x 4096 point that the regions' size alone is nearest to.
TEST(GemmCalibration, ACapacityGridIsMatchedOnTheRowsThatRun) {
  CalibrationFile f("[[grouped_gemm]]\ngroups = 2\nm_per_group = 512\nn = 2048\nk = 2048\ntime_us = 16.4\n"
                    "[[grouped_gemm]]\ngroups = 2\nm_per_group = 4096\nn = 2048\nk = 2048\ntime_us = 60.0\n");
  const GpuConfig g = calibrated(f.path());
  const GemmModel region(g, {std::vector<uint64_t>(2, 4096), 2048, 2048, 2, std::vector<uint64_t>(2, 512)});
  ASSERT_NE(region.calibration_point(), nullptr);
  EXPECT_EQ(region.calibration_point()->m, 512u);
  EXPECT_NEAR(region.efficiency(), tile_seconds(2048, 1.0) / 16.4e-6, 1e-12);
  const GemmModel full(g, {std::vector<uint64_t>(2, 4096), 2048, 2048});
  EXPECT_EQ(full.calibration_point()->m, 4096u);
}

TEST(GemmCalibration, BadFilesNameFileAndLine) {
  auto reason = [](const std::string& text) {
    CalibrationFile f(text);
    try {
      GemmCalibration::load(f.path());
    } catch (const UserError& e) {
      const std::string where = e.where();
      return where.substr(where.rfind(':') + 1) + " " + e.reason();
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(reason("[[gemm]]\nm = 128\nn = 4096\nk = 4096\n"), "1 'time_us' must be a positive number");
  EXPECT_EQ(reason("device = \"x\"\n\n[[gemm]]\nm = 0\nn = 4096\nk = 4096\ntime_us = 1.0\n"),
            "3 'm' must be an integer of at least 1");
  EXPECT_EQ(reason("[[grouped_gemm]]\nm_per_group = 16\nn = 4096\nk = 4096\ntime_us = 1.0\n"), "1 missing 'groups'");
  EXPECT_EQ(reason("gemm = 3\n"), "1 'gemm' must be an array of tables");
  const std::string parse = reason("[[gemm]\n");
  EXPECT_EQ(parse.substr(0, 2), "1 ") << parse;
  const std::string empty = [] {
    CalibrationFile f("device = \"H200\"\n");
    try {
      GemmCalibration::load(f.path());
    } catch (const UserError& e) {
      return e.reason();
    }
    return std::string("(no error)");
  }();
  EXPECT_EQ(empty, "holds no [[gemm]] or [[grouped_gemm]] measurement");
}

TEST(GemmCalibration, TheConfigSelectsTheModelAndChecksTheFile) {
  ParamRegistry r;
  declare_gpu_params(r);
  declare_host_params(r);
  declare_net_params(r);
  declare_hub_params(r);
  auto build = [&r](const std::string& extra) {
    PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
    Config c(r);
    catalog.merge_preset(c, PresetKind::Hardware, catalog.resolve(PresetKind::Hardware, "dgx-h800", "test"));
    c.merge_text(extra, "test");
    c.resolve();
    return GpuConfig::from(c);
  };
  // The shipped H800 preset reads XLA's sm_90 table beside it, from any working directory.
  const GpuConfig shipped = build("");
  ASSERT_NE(shipped.gemm_calibration, nullptr);
  EXPECT_EQ(shipped.gemm_calibration->points().size(), 375u);
  // Mixtral's GEMM1 on one expert at 2048 rows (2048 x 28672 x 4096) is matched to the table's
  // 2048 x 4096 x 4096 (4 waves, 91.183 us): e = 4 x 17.906 us / 91.183 us = 0.78549.
  const GemmModel mixtral(shipped, {{2048}, 28672, 4096});
  ASSERT_NE(mixtral.calibration_point(), nullptr);
  EXPECT_EQ(mixtral.calibration_point()->n, 4096u);
  EXPECT_NEAR(mixtral.efficiency(), 4 * tile_seconds(4096, 1.0) / 91.183e-6, 1e-9);
  EXPECT_EQ(build("[gpu]\ngemm_model = \"datasheet\"\n").gemm_calibration, nullptr);
  try {
    build("[gpu]\ngemm_model = \"calibrated\"\ngemm_calibration = \"\"\n");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "gpu.gemm_calibration");
  }
  try {
    build("[gpu]\ngemm_model = \"calibrated\"\ngemm_calibration = \"/nonexistent/h200.toml\"\n");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.what(), std::string("gpu.gemm_calibration: no such file '/nonexistent/h200.toml'"));
  }
  EXPECT_THROW(build("[gpu]\ngemm_model = \"measured\"\n"), UserError);
  CalibrationFile f("[[gemm]]\nm = 8192\nn = 8192\nk = 8192\ntime_us = 2000.0\n");
  const GpuConfig g = build("[gpu]\ngemm_model = \"calibrated\"\ngemm_calibration = \"" + f.path() + "\"\n");
  ASSERT_NE(g.gemm_calibration, nullptr);
  EXPECT_EQ(g.gemm_calibration->points().size(), 1u);
}

}  // namespace
}  // namespace moehub::gpu
