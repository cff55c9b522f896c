// The gpu.* and host.* parameters: presets resolve, derived rates, bad values name their key.

#include "gpu/gpu_config.h"

#include <gtest/gtest.h>

#include "config/preset_catalog.h"
#include "gpu/gpu.h"
#include "gpu/gpu_params.h"
#include "hub/hub_params.h"
#include "gpu_test_support.h"
#include "net/net_params.h"
#include "sim/error.h"

namespace moehub::gpu {
namespace {

ParamRegistry registry() {
  ParamRegistry r;
  declare_gpu_params(r);
  declare_host_params(r);
  declare_net_params(r);
  declare_hub_params(r);  // the hardware presets carry the hub's section too
  return r;
}

Config preset(const ParamRegistry& r, const std::string& name) {
  PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  Config c(r);
  catalog.merge_preset(c, PresetKind::Hardware, catalog.resolve(PresetKind::Hardware, name, "test"));
  c.resolve();
  return c;
}

TEST(GpuConfig, H800PresetMatchesTheTestGpu) {
  const ParamRegistry r = registry();
  const GpuConfig g = GpuConfig::from(preset(r, "dgx-h800"));
  const GpuConfig t = testing::h800();
  EXPECT_EQ(g.sm_count, t.sm_count);
  EXPECT_EQ(g.hbm_achievable(), t.hbm_achievable());
  EXPECT_EQ(g.sm_tensor_flops_per_second(), t.sm_tensor_flops_per_second());
  EXPECT_EQ(g.sm_tensor_flops_per_second(), 5246976000000u);
  EXPECT_EQ(g.hbm_achievable().bytes_per_second(), 2914500000000u);
  EXPECT_EQ(g.sm_store_bandwidth().bytes_per_second(), 63360000000u);
  EXPECT_EQ(g.shared_memory_per_sm, 233472u);
  EXPECT_EQ(g.gemm_tile.m, 128u);
  EXPECT_EQ(g.gemm_tile.k, 64u);
  EXPECT_EQ(g.launch_gap, Time::from_ns(1500));
  EXPECT_EQ(g.poll_latency, Time::from_ns(150));
  EXPECT_EQ(g.dram_latency, Time::from_ns(421));
  const HostConfig h = HostConfig::from(preset(r, "dgx-h800"));
  EXPECT_EQ(h.issue_cost, Time::from_us(3));
  EXPECT_EQ(h.d2h_bandwidth.bytes_per_second(), 64000000000u);
}

TEST(GpuConfig, DenseBf16PeakIsTheDatasheetValue) {
  // 132 SMs x 4096 FLOP/clk x 1.83 GHz = 989.4 TFLOPS.
  const GpuConfig g = testing::h800();
  EXPECT_EQ(g.sm_count * g.tensor_flops_per_clock * g.tensor_clock.hertz(), 989429760000000u);
}

TEST(GpuConfig, H100AndH200PresetsOverrideOnlyWhatDiffers) {
  const ParamRegistry r = registry();
  const Config h100 = preset(r, "dgx-h100");
  const Config h200 = preset(r, "hgx-h200");
  EXPECT_EQ(GpuConfig::from(h100).gemm_efficiency, 0.80);
  EXPECT_EQ(GpuConfig::from(h100).hbm_bandwidth, GpuConfig::from(preset(r, "dgx-h800")).hbm_bandwidth);
  EXPECT_EQ(h100.bandwidth("net.link_bandwidth").bytes_per_second(), 450000000000u);
  EXPECT_EQ(GpuConfig::from(h200).hbm_bandwidth.bytes_per_second(), 4800000000000u);
  EXPECT_EQ(GpuConfig::from(h200).hbm_efficiency, 0.85);
  EXPECT_EQ(h200.bandwidth("net.link_bandwidth").bytes_per_second(), 450000000000u);
  EXPECT_EQ(h200.string("gpu.name"), "H200-SXM");
}

std::string where_of(const GpuConfig& g) {
  try {
    g.validate();
  } catch (const UserError& e) {
    return e.where();
  }
  return "";
}

TEST(GpuConfig, BadValuesNameTheirKey) {
  EXPECT_EQ(where_of(testing::h800()), "");
  GpuConfig g = testing::h800();
  g.sm_count = 0;
  EXPECT_EQ(where_of(g), "gpu.sm_count");
  g = testing::h800();
  g.gemm_tile.n = 0;
  EXPECT_EQ(where_of(g), "gpu.gemm_tile_n");
  g = testing::h800();
  g.hbm_efficiency = 0;
  EXPECT_EQ(where_of(g), "gpu.hbm_efficiency");
  g = testing::h800();
  g.gemm_threads_per_block = 4096;
  EXPECT_EQ(where_of(g), "gpu.gemm_threads_per_block");
  g = testing::h800();
  g.poll_latency = Time::zero();
  EXPECT_EQ(where_of(g), "gpu.poll_latency");
  g = testing::h800();
  g.max_blocks_per_sm = 0;
  EXPECT_EQ(where_of(g), "gpu.max_blocks_per_sm");
  // The Gpu itself refuses an invalid config.
  Simulator sim;
  g = testing::h800();
  g.sm_count = 0;
  EXPECT_THROW(Gpu(sim, g), UserError);
}

TEST(GpuConfig, RegistryRejectsZeroSmsWithTheKey) {
  const ParamRegistry r = registry();
  PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  Config c(r);
  catalog.merge_preset(c, PresetKind::Hardware, catalog.resolve(PresetKind::Hardware, "dgx-h800", "test"));
  c.set("gpu.gemm_tile_m", "0", "--set");
  try {
    c.resolve();
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gpu.gemm_tile_m"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moehub::gpu
