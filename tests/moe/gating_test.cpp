#include <gtest/gtest.h>

#include <cmath>

#include "moe/gating.h"

namespace moehub {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(Gating, SoftmaxTopTwoRenormalised) {
  RouterSpec spec;
  spec.experts = 4;
  spec.top_k = 2;
  const float logits[] = {1.0f, 3.0f, 2.0f, 0.0f};
  int32_t ids[2];
  float w[2];
  route_token(spec, logits, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);  // e^3 / (e^3 + e^2)
  EXPECT_NEAR(w[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
  spec.norm_topk = false;
  route_token(spec, logits, ids, w);
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(2.0) / z, 1e-6);
}

TEST(Gating, TiesGoToTheLowerExpert) {
  RouterSpec spec;
  spec.experts = 4;
  spec.top_k = 2;
  const float logits[] = {0.5f, 1.0f, 0.5f, 1.0f};
  int32_t ids[2];
  float w[2];
  route_token(spec, logits, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
}

// 8 experts in 4 groups of 2, tokens may use 2 groups; sigmoid scores.
class GroupLimited : public ::testing::Test {
 protected:
  void SetUp() override {
    spec.experts = 8;
    spec.top_k = 2;
    spec.score = ScoreFunction::Sigmoid;
    spec.groups = 4;
    spec.topk_groups = 2;
    spec.routed_scaling = 2.5;
  }
  RouterSpec spec;
  // Scores: g0 {.5, .5}, g1 {.9526, .2689}, g2 {.7311, .7311}, g3 {.1192, .9241}.
  const float logits[8] = {0.0f, 0.0f, 3.0f, -1.0f, 1.0f, 1.0f, -2.0f, 2.5f};
};

TEST_F(GroupLimited, TopTwoSumKeepsGroupsTwoAndOne) {
  spec.group_score = GroupScore::Top2Sum;  // g2 1.462, g1 1.222, g3 1.043, g0 1.0
  int32_t ids[2];
  float w[2];
  route_token(spec, logits, ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 4);  // ties with expert 5; expert 7 (0.924) is in a dropped group
  const double s2 = sigmoid(3.0), s4 = sigmoid(1.0);
  EXPECT_NEAR(w[0], 2.5 * s2 / (s2 + s4), 1e-5);
  EXPECT_NEAR(w[1], 2.5 * s4 / (s2 + s4), 1e-5);
}

TEST_F(GroupLimited, MaxKeepsGroupsOneAndThree) {
  spec.group_score = GroupScore::Max;  // g1 .953, g3 .924, g2 .731, g0 .5
  int32_t ids[2];
  float w[2];
  route_token(spec, logits, ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 7);
}

TEST(Gating, GateTokensComputesLogitsAsXTimesWGate) {
  RouterSpec spec;
  spec.experts = 3;
  spec.top_k = 1;
  // x: 2 tokens x 2 hidden; W_gate: 2 x 3. Token 0 logits (1, 2, 0) -> expert 1; token 1 (0, -1, 3) -> 2.
  const std::vector<float> x = {1.0f, 0.0f, 0.0f, 1.0f};
  const std::vector<float> wg = {1.0f, 2.0f, 0.0f, 0.0f, -1.0f, 3.0f};
  const Routing r = gate_tokens(spec, x, 2, 2, wg);
  EXPECT_EQ(r.expert(0, 0), 1);
  EXPECT_EQ(r.expert(1, 0), 2);
  EXPECT_FLOAT_EQ(r.weight(0, 0), 1.0f);  // top-1 renormalised
}

}  // namespace
}  // namespace moehub
