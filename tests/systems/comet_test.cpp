// Comet: mechanism-level facts on small layers (hand-checkable, not the paper's numbers).

#include <gtest/gtest.h>

#include "gpu/gpu_config.h"
#include "sim/error.h"
#include "systems/comet/comet_plan.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::DefaultsRun;

TEST(Comet, AdaptiveCommBlocksBalanceSendingAndGemm1) {
  ParamRegistry reg = build_param_registry();
  PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  const Config c = build_config(catalog, reg, ConfigRequest{});
  const gpu::GpuConfig gc = gpu::GpuConfig::from(c);
  ASSERT_EQ(gc.sm_store_bandwidth().bytes_per_second(), 63360000000u);  // 32 B x 1.98 GHz
  // 633,600 B: 1 block 10 us, 2: 5 us, 3: 3.333 us, 4+: capped by the 200 GB/s link, 3.168 us.
  // 262 tiles of 1 us: on 131 SMs 2 us, on 130..128 SMs 3 us, on 127 SMs 3 us (tie: fewer blocks).
  EXPECT_EQ(CometPlan::adaptive_comm_blocks(633600, 0, 262, Time::from_us(1), gc, Bandwidth::bytes_per_second(200000000000u)), 4u);
  // Nothing to send: one block is enough.
  EXPECT_EQ(CometPlan::adaptive_comm_blocks(0, 0, 262, Time::from_us(1), gc, Bandwidth::bytes_per_second(200000000000u)), 1u);
}

TEST(Comet, FunctionalOutputMatchesTheReference) {
  for (const char* mode : {"comm_blocks", "copy_engine_gets"}) {
    DefaultsRun r("comet", {"run.tokens=256", "model.hidden=64", "model.ffn_hidden=96", "run.functional=true",
                          std::string("systems.comet.dispatch=") + mode},
                true);
    EXPECT_TRUE(r.functional->passed()) << mode << r.functional->report().dump();
  }
}

// At flow fidelity a tagged store reaches the destination's receiver when its flow completes,
// as its packet would: the rows are written before the tile flags that guard them complete.
TEST(Comet, FunctionalOutputMatchesTheReferenceAtFlowFidelity) {
  DefaultsRun r("comet", {"run.tokens=256", "model.hidden=64", "model.ffn_hidden=96", "run.functional=true",
                        "net.fidelity=flow"},
              true);
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump();
  // Each GPU's dispatch ends when its last remote row is in (before: never, at flow fidelity).
  for (int g = 0; g < r.cluster->gpus(); ++g) EXPECT_TRUE(r.stats["gpus"][g].contains("dispatch_end_ps")) << g;
}

TEST(Comet, BadBlockCountsNameTheirKey) {
  try {
    DefaultsRun r("comet", {"run.tokens=256", "systems.comet.gather_rs_ctas=132"});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("systems.comet.gather_rs_ctas"), std::string::npos);
  }
}

}  // namespace
}  // namespace moehub
