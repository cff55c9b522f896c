#include <gtest/gtest.h>

#include "moe/placement.h"
#include "sim/error.h"

namespace moehub {
namespace {

TEST(TokenPartition, DivisibleAndNot) {
  const TokenPartition even(8192, 8);
  EXPECT_EQ(even.begin(3), 3072);
  EXPECT_EQ(even.count(7), 1024);
  EXPECT_EQ(even.gpu_of_token(1023), 0);
  EXPECT_EQ(even.gpu_of_token(1024), 1);
  // 10 tokens over 4 GPUs: q = 2, r = 2 -> [0,3) [3,6) [6,8) [8,10).
  const TokenPartition odd(10, 4);
  EXPECT_EQ(odd.counts(), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(odd.begin(2), 6);
  EXPECT_EQ(odd.max_count(), 3);
  const int64_t expected_gpu[10] = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3};
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(odd.gpu_of_token(t), expected_gpu[t]) << t;
}

TEST(TokenPartition, FewerTokensThanGpusNamesRunTokens) {
  try {
    TokenPartition(3, 4);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "run.tokens");
  }
  EXPECT_NO_THROW(TokenPartition(4, 4));
}

TEST(ExpertPlacement, Contiguous) {
  const ExpertPlacement p = ExpertPlacement::contiguous(8, 4);
  EXPECT_EQ(p.gpu_of_expert(5), 2);
  EXPECT_EQ(p.local_experts(2), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(p.local_index(5), 1);
  try {
    ExpertPlacement::contiguous(8, 16);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "model.experts");
    EXPECT_NE(e.reason().find("workload.expert_map"), std::string::npos);
  }
}

TEST(ExpertPlacement, ExplicitMap) {
  const ExpertPlacement p = ExpertPlacement::from_map({1, 0, 1}, 3, 2);
  EXPECT_EQ(p.local_experts(1), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(p.local_index(2), 1);
  EXPECT_EQ(p.local_index(1), 0);
  // A map may leave GPUs without experts (8 experts on 16 GPUs).
  std::vector<int64_t> sparse(8);
  for (int64_t e = 0; e < 8; ++e) sparse[static_cast<size_t>(e)] = 2 * e;
  const ExpertPlacement s = ExpertPlacement::from_map_or_contiguous(sparse, 8, 16);
  EXPECT_TRUE(s.local_experts(1).empty());
  EXPECT_EQ(s.gpu_of_expert(7), 14);
  EXPECT_THROW(ExpertPlacement::from_map({0, 1}, 3, 2), UserError);
  try {
    ExpertPlacement::from_map({0, 2, 1}, 3, 2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.expert_map");
    EXPECT_NE(e.reason().find("GPU 2"), std::string::npos);
  }
}

// 4 tokens on 2 GPUs (tokens 0, 1 | 2, 3), experts 0, 1 on GPU 0 and 2, 3 on GPU 1.
TEST(DispatchPlan, HandBuiltRouting) {
  Routing r(4, 4, 2);
  const int32_t ids[4][2] = {{2, 0}, {3, 2}, {0, 1}, {2, 1}};
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t j = 0; j < 2; ++j) r.set(t, j, ids[t][j], 0.5f);
  }
  const DispatchPlan plan(r, TokenPartition(4, 2), ExpertPlacement::contiguous(4, 2));
  EXPECT_EQ(plan.rows(0, 0), 1);  // t0 -> e0
  EXPECT_EQ(plan.rows(0, 1), 3);  // t0 -> e2, t1 -> e3, t1 -> e2
  EXPECT_EQ(plan.rows(1, 0), 3);  // t2 -> e0, t2 -> e1, t3 -> e1
  EXPECT_EQ(plan.rows(1, 1), 1);  // t3 -> e2
  EXPECT_EQ(plan.rows_into(0), 4);
  EXPECT_EQ(plan.rows_from(1), 4);
  EXPECT_EQ(plan.remote_rows(), 6);
  EXPECT_DOUBLE_EQ(plan.remote_fraction(), 0.75);
  EXPECT_EQ(plan.rows_to_expert(0, 2), 2);
  EXPECT_EQ(plan.rows_to_expert(1, 1), 2);
  EXPECT_EQ(plan.expert_rows(2), (std::vector<RowRef>{{0, 0}, {1, 1}, {3, 0}}));
  EXPECT_EQ(plan.expert_rows(1), (std::vector<RowRef>{{2, 1}, {3, 1}}));
  EXPECT_EQ(plan.expert_rows(3), (std::vector<RowRef>{{1, 0}}));
}

}  // namespace
}  // namespace moehub
