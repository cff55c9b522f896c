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
  EXPECT_EQ(build("").gemm_calibration, nullptr);  // the shipped presets use the datasheet model
  try {
    build("[gpu]\ngemm_model = \"calibrated\"\n");
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
