#include "moe/layer_cost.h"

#include <stdexcept>

namespace moehub {
namespace {

uint64_t u(int64_t v) {
  if (v < 0) throw std::logic_error("layer cost: negative size");
  return static_cast<uint64_t>(v);
}

// One gated (or plain) FFN of hidden size f on t tokens: GEMM1, activation, GEMM2.
OpCost ffn_cost(const ModelShape& m, int64_t f, int64_t t) {
  const int64_t h = m.hidden, f1 = m.gated ? 2 * f : f, b = m.dtype_bytes;
  OpCost c;
  c.flops = u(2 * t * h * f1 + 2 * t * f * h);
  c.bytes = u(b * ((t * h + h * f1 + t * f1)     // GEMM1: input, W1, output
                   + (t * f1 + t * f)            // activation: read both halves, write F
                   + (t * f + f * h + t * h)));  // GEMM2: input, W2, output
  return c;
}

}  // namespace

OpCost AttentionCost::total() const {
  OpCost c = qkv_projection;
  c += attention;
  c += output_projection;
  return c;
}

nlohmann::json AttentionCost::to_json() const {
  return {{"tokens", tokens},
          {"qkv_projection", qkv_projection.to_json()},
          {"attention", attention.to_json()},
          {"output_projection", output_projection.to_json()},
          {"total", total().to_json()}};
}

AttentionCost attention_cost(const ModelShape& m, int64_t t) {
  const int64_t h = m.hidden, nh = m.attn_heads, nkv = m.kv_heads, d = m.head_dim, dv = m.v_head_dim;
  const int64_t b = m.dtype_bytes;
  const int64_t q_cols = nh * d;
  const int64_t kv_cols = nkv * (d + dv);
  AttentionCost c;
  c.tokens = t;

  // Projections: full rank H x cols, or low rank H x r then r x cols (the rank-r activations
  // are written and read back once).
  int64_t flops = 0, weights = 0, staged = 0;
  const auto project = [&](int64_t rank, int64_t cols) {
    if (rank == 0) {
      flops += 2 * t * h * cols;
      weights += h * cols;
    } else {
      flops += 2 * t * (h * rank + rank * cols);
      weights += h * rank + rank * cols;
      staged += 2 * t * rank;
    }
  };
  project(m.q_lora_rank, q_cols);
  project(m.kv_lora_rank, kv_cols);
  c.qkv_projection.flops = u(flops);
  c.qkv_projection.bytes = u(b * (t * h + weights + staged + t * (q_cols + kv_cols)));

  const int64_t pairs = t * (t + 1) / 2;  // causal
  c.attention.flops = u(2 * nh * (d + dv) * pairs);
  c.attention.bytes = u(b * (t * q_cols + t * kv_cols + t * nh * dv));

  c.output_projection.flops = u(2 * t * nh * dv * h);
  c.output_projection.bytes = u(b * (t * nh * dv + nh * dv * h + t * h));
  return c;
}

OpCost shared_expert_cost(const ModelShape& m, int64_t t) {
  OpCost c;
  for (int64_t i = 0; i < m.shared_experts; ++i) c += ffn_cost(m, m.shared_ffn_hidden, t);
  if (m.shared_experts > 0 && m.shared_expert_gate) {
    // sigmoid(x w) with w of H x 1: read x and w, write one scale per token.
    c.flops += u(2 * t * m.hidden);
    c.bytes += u(m.dtype_bytes * (t * m.hidden + m.hidden + t));
  }
  return c;
}

OpCost dense_ffn_cost(const ModelShape& m, int64_t t) {
  return m.dense_layers == 0 ? OpCost{} : ffn_cost(m, m.dense_ffn_hidden, t);
}

}  // namespace moehub
