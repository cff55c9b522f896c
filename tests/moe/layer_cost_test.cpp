#include <gtest/gtest.h>

#include "moe/layer_cost.h"

namespace moehub {
namespace {

// H 8, 2 query heads, 1 KV head, head_dim 4, 2-byte elements, 3 tokens.
ModelShape tiny_gqa() {
  ModelShape m;
  m.layers = 1;
  m.hidden = 8;
  m.ffn_hidden = 4;
  m.attn_heads = 2;
  m.kv_heads = 1;
  m.head_dim = 4;
  m.v_head_dim = 4;
  m.dtype_bytes = 2;
  m.router.experts = 2;
  m.router.top_k = 1;
  return m;
}

TEST(AttentionCost, GqaByHand) {
  const AttentionCost c = attention_cost(tiny_gqa(), 3);
  // Q 8 columns, K+V 8 columns: 2 x 3 x 8 x 16; bytes 2 x (x 24 + W 128 + out 48).
  EXPECT_EQ(c.qkv_projection.flops, 768u);
  EXPECT_EQ(c.qkv_projection.bytes, 400u);
  // Causal pairs 3 x 4 / 2 = 6: 2 x 2 heads x (4 + 4) x 6; bytes 2 x (Q 24 + KV 24 + O 24).
  EXPECT_EQ(c.attention.flops, 192u);
  EXPECT_EQ(c.attention.bytes, 144u);
  // 2 x 3 x 8 x 8; bytes 2 x (O 24 + W 64 + out 24).
  EXPECT_EQ(c.output_projection.flops, 384u);
  EXPECT_EQ(c.output_projection.bytes, 224u);
  EXPECT_EQ(c.total().flops, 1344u);
  EXPECT_EQ(c.total().bytes, 768u);
}

TEST(AttentionCost, LowRankProjectionsByHand) {
  ModelShape m = tiny_gqa();
  m.kv_heads = 2;
  m.head_dim = 6;
  m.q_lora_rank = 4;
  m.kv_lora_rank = 2;
  const AttentionCost c = attention_cost(m, 3);
  // Q: 2 x 3 x (8x4 + 4x12) = 480; KV: 2 x 3 x (8x2 + 2x20) = 336.
  EXPECT_EQ(c.qkv_projection.flops, 816u);
  // 2 x (x 24 + W 80 + 56 + staged 24 + 12 + out 3 x 32).
  EXPECT_EQ(c.qkv_projection.bytes, 584u);
  EXPECT_EQ(c.attention.flops, 240u);  // 2 x 2 x (6 + 4) x 6
  EXPECT_EQ(c.attention.bytes, 240u);  // 2 x (36 + 60 + 24)
  EXPECT_EQ(c.output_projection.flops, 384u);
}

TEST(AttentionCost, MixtralOneGpuOfEight) {
  ModelShape m = tiny_gqa();
  m.hidden = 4096;
  m.attn_heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.v_head_dim = 128;
  const AttentionCost c = attention_cost(m, 1024);
  EXPECT_EQ(c.qkv_projection.flops, 51539607552u);    // 2 x 1024 x 4096 x (4096 + 2048)
  EXPECT_EQ(c.attention.flops, 8598323200u);          // 2 x 32 x 256 x 524800
  EXPECT_EQ(c.output_projection.flops, 34359738368u); // 2 x 1024 x 4096 x 4096
}

TEST(FfnCost, SharedExpertWithGateAndDense) {
  ModelShape m = tiny_gqa();
  m.hidden = 2048;
  m.shared_experts = 1;
  m.shared_ffn_hidden = 5632;
  m.shared_expert_gate = true;
  const OpCost s = shared_expert_cost(m, 2);
  EXPECT_EQ(s.flops, 138420224u);  // 2 tokens x 69210112
  // 2 B x (GEMM1 4096 + 23068672 + 22528, act 22528 + 11264, GEMM2 11264 + 11534336 + 4096) + gate 2 x (4096 + 2048 + 2).
  EXPECT_EQ(s.bytes, 69369860u);
  EXPECT_EQ(dense_ffn_cost(m, 2).flops, 0u);
  m.dense_layers = 1;
  m.dense_ffn_hidden = 10;
  EXPECT_EQ(dense_ffn_cost(m, 1).flops, 2u * 2048 * 20 + 2u * 10 * 2048);
}

}  // namespace
}  // namespace moehub
