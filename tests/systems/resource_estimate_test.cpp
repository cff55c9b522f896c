// The resource estimate made before a run: hand-computed for Mixtral-8x7B on the DGX-H800.

#include <gtest/gtest.h>

#include "platform/resource_estimate.h"
#include "sim/error.h"
#include "systems/system_registry.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

TEST(ResourceEstimate, MemoryAndTheLayersLowerBound) {
  const ParamRegistry registry = build_param_registry();
  const Config c = test::make_config(registry, {"run.tokens=1000", "run.memory_budget=1MiB"}, test::ConfigBase::Defaults);
  const ModelShape m = ModelShape::from(c);
  const ResourceEstimate e = estimate_resources(c, m, {find_system("ideal")}, 1);
  // 1000 tokens x 8 B + 2000 rows x (8 B workload + 24 B of ideal's state).
  EXPECT_EQ(e.memory_bytes, 1000u * 8 + 2000u * (8 + 24));
  EXPECT_EQ(e.budget_bytes, 1048576u);
  // 2 x 2000 rows x 4096 x (2 x 14336 + 14336) FLOPs over 8 GPUs x 132 SMs x 4096 FLOP/clock x 1.83 GHz.
  EXPECT_NEAR(e.min_layer_seconds, 2.0 * 2000 * 4096 * 43008 / (8.0 * 132 * 4096 * 1.83e9), 1e-12);
  // Two costlier systems at once: deepep's 112 B per row, twice.
  const ResourceEstimate two = estimate_resources(c, m, {find_system("ideal"), find_system("deepep")}, 2);
  EXPECT_EQ(two.memory_bytes, 1000u * 8 + 2000u * 8 + 2000u * 112 * 2);
}

TEST(ResourceEstimate, RefusesWhatExceedsTheBudget) {
  const ParamRegistry registry = build_param_registry();
  const Config c = test::make_config(registry, {"run.tokens=100000", "run.memory_budget=1MiB"}, test::ConfigBase::Defaults);
  EXPECT_THROW(check_resources(c, ModelShape::from(c), {find_system("ideal")}, 1), UserError);
  const Config roomy = test::make_config(registry, {"run.tokens=100000"}, test::ConfigBase::Defaults);
  EXPECT_NO_THROW(check_resources(roomy, ModelShape::from(roomy), {find_system("ideal")}, 1));
}

}  // namespace
}  // namespace moehub
