#include <gtest/gtest.h>

#include <filesystem>

#include "moe/layer_cost.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "moe_test_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

std::string where_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.where();
  }
  return "(no error)";
}

TEST(ModelShape, MixtralPresetAndPerRowCosts) {
  const ParamRegistry r = test::workload_registry();
  const ModelShape m = ModelShape::from(test::workload_config(r, "mixtral-8x7b"));
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.experts(), 8);
  EXPECT_EQ(m.top_k(), 2);
  EXPECT_EQ(m.gemm1_cols(), 28672);
  EXPECT_EQ(m.row_bytes(), 8192u);                        // 4096 x 2 B
  EXPECT_EQ(m.gemm1_flops_per_row(), 234881024u);         // 2 x 4096 x 28672
  EXPECT_EQ(m.gemm2_flops_per_row(), 117440512u);         // 2 x 14336 x 4096
  EXPECT_EQ(m.expert_flops_per_row(), 352321536u);
  EXPECT_EQ(m.expert_weight_bytes(), 352321536u);         // (4096 x 28672 + 14336 x 4096) x 2 B
  EXPECT_EQ(m.router_flops_per_token(), 65536u);          // 2 x 4096 x 8
  EXPECT_EQ(m.shared_expert_flops_per_token(), 0u);
  EXPECT_EQ(m.moe_layers(), 32);
}

TEST(ModelShape, SharedAndDenseCosts) {
  const ParamRegistry r = test::workload_registry();
  const ModelShape q = ModelShape::from(test::workload_config(r, "qwen1.5-moe-a2.7b"));
  // 2 x 2048 x 11264 + 2 x 5632 x 2048 + the 2048 x 1 sigmoid gate (2 x 2048).
  EXPECT_EQ(q.shared_expert_flops_per_token(), 69210112u);
  const ModelShape d = ModelShape::from(test::workload_config(r, "deepseek-v3"));
  EXPECT_EQ(d.dense_ffn_flops_per_token(), 792723456u);  // 2 x 7168 x 36864 + 2 x 18432 x 7168
  EXPECT_EQ(d.moe_layers(), 58);
  EXPECT_EQ(d.router.groups, 8);
  EXPECT_EQ(d.router.topk_groups, 4);
  EXPECT_EQ(d.router.score, ScoreFunction::Sigmoid);
  EXPECT_EQ(d.router.group_score, GroupScore::Top2Sum);
  EXPECT_DOUBLE_EQ(d.router.routed_scaling, 2.5);
}

TEST(ModelShape, InconsistentShapesNameTheKey) {
  const ParamRegistry r = test::workload_registry();
  const auto bad = [&](const std::string& extra) {
    return where_of([&] { ModelShape::from(test::workload_config(r, "mixtral-8x7b", extra)); });
  };
  EXPECT_EQ(bad("[model]\ntop_k = 9\n"), "model.top_k");
  EXPECT_EQ(bad("[model]\nkv_heads = 5\n"), "model.kv_heads");
  EXPECT_EQ(bad("[model]\nrouting_groups = 3\n"), "model.routing_groups");
  EXPECT_EQ(bad("[model]\nrouting_groups = 4\nrouting_topk_groups = 5\n"), "model.routing_topk_groups");
  // 4 groups of 2 experts, 1 group allowed: only 2 experts reachable for top-2 -> fine; top-3 not.
  EXPECT_EQ(bad("[model]\nrouting_groups = 4\nrouting_topk_groups = 1\ntop_k = 3\n"), "model.top_k");
  EXPECT_EQ(bad("[model]\nshared_experts = 1\n"), "model.shared_ffn_hidden");
  EXPECT_EQ(bad("[model]\ndense_layers = 40\ndense_ffn_hidden = 10\n"), "model.dense_layers");
  EXPECT_EQ(bad("[model]\ndense_layers = 1\n"), "model.dense_ffn_hidden");
  EXPECT_EQ(bad(""), "(no error)");
}

TEST(ModelShape, EveryShippedPresetLoadsAndBuildsAWorkload) {
  const ParamRegistry r = test::workload_registry();
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(MOEHUB_SOURCE_CONFIG_DIR) / "models")) {
    if (entry.path().extension() != ".toml") continue;
    ++presets;
    SCOPED_TRACE(entry.path().string());
    // 4 GPUs divide every preset's expert count (60 for Qwen1.5-MoE).
    const Config c = test::workload_config(r, entry.path().stem().string(), "[run]\ngpus = 4\ntokens = 512\n");
    const ModelShape m = ModelShape::from(c);
    const Workload w = Workload::build(WorkloadConfig::from(c), m);
    EXPECT_EQ(w.routing().rows(), 512 * m.top_k());
    EXPECT_GT(attention_cost(m, 128).total().flops, 0u);
  }
  EXPECT_EQ(presets, 12);
}

TEST(ModelShape, PaperTableTwo) {
  const ParamRegistry r = test::workload_registry();
  const ModelShape q = ModelShape::from(test::workload_config(r, "qwen2-moe-2.7b"));
  EXPECT_EQ(q.layers, 24);
  EXPECT_EQ(q.hidden, 2048);
  EXPECT_EQ(q.ffn_hidden, 1408);
  EXPECT_EQ(q.top_k(), 4);
  EXPECT_EQ(q.experts(), 64);
  const ModelShape p = ModelShape::from(test::workload_config(r, "phi-3.5-moe"));
  EXPECT_EQ(p.layers, 32);
  EXPECT_EQ(p.hidden, 4096);
  EXPECT_EQ(p.ffn_hidden, 6400);
  EXPECT_EQ(p.top_k(), 2);
  EXPECT_EQ(p.experts(), 16);
  const ModelShape released = ModelShape::from(test::workload_config(r, "qwen1.5-moe-a2.7b"));
  EXPECT_EQ(released.experts(), 60);
  EXPECT_EQ(released.shared_ffn_hidden, 5632);
  EXPECT_TRUE(released.shared_expert_gate);
}

}  // namespace
}  // namespace moehub
