#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "moe/reference_layer.h"
#include "sim/error.h"
#include "moe/synthetic_routing.h"

namespace moehub {
namespace {

ReferenceShape small_shape(bool gated = true) {
  ReferenceShape s;
  s.hidden = 64;
  s.ffn_hidden = 128;
  s.gated = gated;
  s.router.experts = 8;
  s.router.top_k = 2;
  return s;
}

// EP+TP shards (moe/tp_layout.h): column-sharded GEMM1 and row-sharded GEMM2 over TP 4 (32
// of the 128 FFN columns each); the shards' partial outputs sum to the whole expert.
TEST(ReferenceLayer, ShardPartialOutputsSumToTheExpert) {
  for (const bool gated : {true, false}) {
    const ReferenceLayer layer(small_shape(gated), 7);
    const std::vector<float> x = layer.make_input(1, 3);
    std::vector<float> full(64), part(64), sum(64, 0.0f), act(32);
    layer.expert_forward(5, x.data(), full.data());
    for (int64_t r = 0; r < 4; ++r) {
      layer.expert_hidden_shard(5, 32 * r, 32, x.data(), act.data());
      layer.expert_output_shard(5, 32 * r, 32, act.data(), part.data());
      for (size_t c = 0; c < 64; ++c) sum[c] += part[c];
    }
    for (size_t c = 0; c < 64; ++c) EXPECT_NEAR(sum[c], full[c], 1e-5 + 1e-4 * std::abs(full[c])) << gated << " " << c;
    // A shard past the FFN width is a logic error.
    EXPECT_THROW(layer.expert_hidden_shard(5, 112, 32, x.data(), act.data()), std::logic_error);
  }
}

// The same expert in double precision, written independently of the float32 code.
std::vector<double> expert_in_double(const ReferenceLayer& layer, int64_t e, const float* x) {
  const ReferenceShape& s = layer.shape();
  const int64_t f1 = s.gemm1_cols();
  std::vector<double> mid(static_cast<size_t>(f1), 0.0);
  for (int64_t c = 0; c < f1; ++c) {
    for (int64_t i = 0; i < s.hidden; ++i) mid[static_cast<size_t>(c)] += double{x[i]} * layer.w1(e)[static_cast<size_t>(i * f1 + c)];
  }
  std::vector<double> y(static_cast<size_t>(s.hidden), 0.0);
  for (int64_t i = 0; i < s.ffn_hidden; ++i) {
    const double g = mid[static_cast<size_t>(i)];
    const double silu = g / (1.0 + std::exp(-g));
    const double a = s.gated ? silu * mid[static_cast<size_t>(s.ffn_hidden + i)] : silu;
    for (int64_t c = 0; c < s.hidden; ++c) y[static_cast<size_t>(c)] += a * layer.w2(e)[static_cast<size_t>(i * s.hidden + c)];
  }
  return y;
}

TEST(ReferenceLayer, DeterministicWeightsAndInputs) {
  const ReferenceLayer a(small_shape(), 5), b(small_shape(), 5), c(small_shape(), 6);
  EXPECT_EQ(a.w1(3), b.w1(3));
  EXPECT_EQ(a.gate_weights(), b.gate_weights());
  EXPECT_NE(a.w2(0), c.w2(0));
  EXPECT_NE(a.w1(0), a.w1(1));  // experts differ
  EXPECT_EQ(a.make_input(16, 9), b.make_input(16, 9));
  EXPECT_NE(a.make_input(16, 9), a.make_input(16, 10));
  // Weights bounded by 1/sqrt(fan_in): W1 fan_in 64 -> 0.125.
  for (float w : a.w1(2)) EXPECT_LE(std::fabs(w), 0.125f);
}

TEST(ReferenceLayer, ExpertMatchesADoublePrecisionComputation) {
  for (bool gated : {true, false}) {
    const ReferenceLayer layer(small_shape(gated), 1);
    const std::vector<float> x = layer.make_input(4, 2);
    std::vector<float> y(64);
    for (int64_t e : {0, 7}) {
      for (int64_t t = 0; t < 4; ++t) {
        layer.expert_forward(e, x.data() + t * 64, y.data());
        const std::vector<double> ref = expert_in_double(layer, e, x.data() + t * 64);
        for (size_t c = 0; c < 64; ++c) EXPECT_NEAR(y[c], ref[c], 1e-5) << "gated " << gated << " e " << e;
      }
    }
  }
}

TEST(ReferenceLayer, ForwardIsTheWeightedSumOfTheChosenExperts) {
  const ReferenceLayer layer(small_shape(), 3);
  const std::vector<float> x = layer.make_input(32, 4);
  const Routing routing = layer.route(x);
  EXPECT_NO_THROW(routing.check_complete());
  const std::vector<float> out = layer.forward(x, routing);
  std::vector<float> y(64);
  for (int64_t t = 0; t < 32; ++t) {
    EXPECT_NEAR(routing.weight(t, 0) + routing.weight(t, 1), 1.0f, 1e-6f);  // norm_topk, scaling 1
    std::vector<float> expect(64, 0.0f);
    for (int64_t j = 0; j < 2; ++j) {
      layer.expert_forward(routing.expert(t, j), x.data() + t * 64, y.data());
      for (size_t c = 0; c < 64; ++c) expect[c] += routing.weight(t, j) * y[c];
    }
    for (size_t c = 0; c < 64; ++c) EXPECT_EQ(out[static_cast<size_t>(t * 64) + c], expect[c]);
  }
  EXPECT_EQ(layer.forward(x), out);  // its own gating by default
}

TEST(ReferenceLayer, ToleranceAcceptsReorderingAndRejectsMisroutedRows) {
  ReferenceShape shape = small_shape();
  shape.router.experts = 16;
  shape.router.top_k = 4;
  const ReferenceLayer layer(shape, 11);
  const int64_t tokens = 256;
  const std::vector<float> x = layer.make_input(tokens, 12);
  const Routing routing = generate_synthetic_routing({tokens, 16, 4, 0.03, 13});
  const std::vector<float> expected = layer.forward(x, routing);

  // A system that combines a token's rows in reverse slot order.
  std::vector<float> reordered(expected.size(), 0.0f);
  std::vector<float> y(64);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 3; j >= 0; --j) {
      layer.expert_forward(routing.expert(t, j), x.data() + t * 64, y.data());
      for (size_t c = 0; c < 64; ++c) reordered[static_cast<size_t>(t * 64) + c] += routing.weight(t, j) * y[c];
    }
  }
  const Comparison ok = compare_to_reference(expected, reordered);
  EXPECT_TRUE(ok.within) << ok.describe();
  EXPECT_LT(ok.max_abs_error, 1e-6);

  // One row of token 5 delivered to token 6's slot instead.
  std::vector<float> misrouted = expected;
  for (size_t c = 0; c < 64; ++c) std::swap(misrouted[5 * 64 + c], misrouted[6 * 64 + c]);
  const Comparison bad = compare_to_reference(expected, misrouted);
  EXPECT_FALSE(bad.within);
  EXPECT_GT(bad.violations, 64);
  EXPECT_GE(bad.worst_index, 5 * 64);
  EXPECT_LT(bad.worst_index, 7 * 64);
}

TEST(CompareToReference, HandComputed) {
  const std::vector<float> expected = {1.0f, -2.0f, 0.0f, 100.0f};
  const std::vector<float> actual = {1.0f, -2.00001f, 0.00002f, 100.02f};
  // Errors 0, 1e-5, 2e-5, 0.02; allowed 1e-5 + 1e-4 |e|: 1.1e-4, 2.1e-4, 1e-5, 0.01001.
  const Comparison c = compare_to_reference(expected, actual);
  EXPECT_FALSE(c.within);
  EXPECT_EQ(c.violations, 2);
  EXPECT_EQ(c.worst_index, 3);
  EXPECT_NEAR(c.max_abs_error, 0.02, 1e-5);
  EXPECT_NEAR(c.max_rel_error, 2e-4, 1e-7);
  const Comparison loose = compare_to_reference(expected, actual, Tolerance{1e-4, 1e-3});
  EXPECT_TRUE(loose.within);
  const std::vector<float> nan = {1.0f, -2.0f, NAN, 100.0f};
  EXPECT_FALSE(compare_to_reference(expected, nan).within);
  EXPECT_THROW(compare_to_reference(expected, std::vector<float>(3)), std::logic_error);
}

TEST(ReferenceLayer, RefusesFullSizeShapes) {
  ReferenceShape s = small_shape();
  s.hidden = 4096;
  s.ffn_hidden = 14336;
  // A full-size model under --functional is the user's choice: a one-line error naming the key.
  try {
    ReferenceLayer layer(s, 1);
    FAIL() << "expected a refusal";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "run.functional");
    EXPECT_NE(e.reason().find("more than its limit of 67108864"), std::string::npos) << e.reason();
  }
}

}  // namespace
}  // namespace moehub
