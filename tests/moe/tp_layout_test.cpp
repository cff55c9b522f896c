#include <gtest/gtest.h>

#include "moe/tp_layout.h"
#include "moe/workload.h"
#include "moe_test_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

std::string where_of(int64_t gpus, int64_t tp, int64_t experts, int64_t ffn) {
  try {
    TpLayout(gpus, tp, experts, ffn);
  } catch (const UserError& e) {
    return e.where();
  }
  return "(no error)";
}

// 8 GPUs, TP 2, Mixtral's 8 experts of F = 14336: EP 4, TP groups {0,1} {2,3} {4,5} {6,7},
// two experts per EP rank, each GPU holding F / 2 = 7168 columns of both.
TEST(TpLayout, GroupsRanksAndShardsByHand) {
  const TpLayout l(8, 2, 8, 14336);
  EXPECT_EQ(l.ep(), 4);
  EXPECT_EQ(l.tp_rank(5), 1);
  EXPECT_EQ(l.ep_rank(5), 2);
  EXPECT_EQ(l.tp_group(5), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(l.ep_group(5), (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(l.shard_ffn(), 7168);
  EXPECT_EQ(l.shard_first_column(1), 7168);
  // Expert 5 is on EP rank 5 / 2 = 2 (GPUs 4, 5): shard experts 10 (rank 0) and 11 (rank 1).
  EXPECT_EQ(l.ep_rank_of_expert(5), 2);
  EXPECT_EQ(l.shard_expert(5, 1), 11);
  EXPECT_EQ(l.expert_of_shard(11), 5);
  EXPECT_EQ(l.rank_of_shard(11), 1);
  EXPECT_EQ(l.gpu_of_shard(10), 4);
  EXPECT_EQ(l.gpu_of_shard(11), 5);
  EXPECT_EQ(l.shard_map(), (std::vector<int64_t>{0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7}));
  // TP 4 of 8: EP 2, groups {0..3} {4..7}; expert 3 on EP rank 0, its rank-2 shard on GPU 2.
  const TpLayout four(8, 4, 8, 128);
  EXPECT_EQ(four.tp_group(6), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(four.ep_group(6), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(four.gpu_of_shard(four.shard_expert(3, 2)), 2);
  EXPECT_EQ(four.shard_first_column(3), 96);
}

TEST(TpLayout, RefusesWhatDoesNotDivide) {
  EXPECT_EQ(where_of(8, 3, 8, 128), "parallel.tp");   // 3 does not divide 8 GPUs
  EXPECT_EQ(where_of(8, 8, 8, 100), "parallel.tp");   // nor 8 the FFN width 100
  EXPECT_EQ(where_of(16, 2, 6, 128), "parallel.tp");  // EP 8 does not divide 6 experts
  EXPECT_EQ(where_of(8, 0, 8, 128), "parallel.tp");
  EXPECT_EQ(where_of(8, 1, 6, 100), "(no error)");    // pure EP checks nothing more here
  EXPECT_EQ(where_of(8, 8, 8, 128), "(no error)");    // EP 1: every GPU holds a shard of each
}

// The workload under TP 2: shard experts, k * T slots with the slot's weight, FFN / T.
TEST(TpLayout, WorkloadShardRows) {
  const ParamRegistry r = test::workload_registry();
  const Config c = test::workload_config(r, "mixtral-8x7b", "[run]\ntokens = 64\n[parallel]\ntp = 2\n");
  const Workload w = Workload::build(WorkloadConfig::from(c), ModelShape::from(c));
  EXPECT_EQ(w.tp().tp(), 2);
  EXPECT_EQ(w.model().ffn_hidden, 7168);
  EXPECT_EQ(w.model().experts(), 16);
  EXPECT_EQ(w.model().top_k(), 4);
  EXPECT_EQ(w.logical_model().top_k(), 2);
  EXPECT_EQ(w.routing().rows(), 2 * w.logical_routing().rows());
  for (int64_t t = 0; t < 64; ++t) {
    for (int64_t j = 0; j < 2; ++j) {
      const int32_t e = w.logical_routing().expert(t, j);
      for (int64_t rk = 0; rk < 2; ++rk) {
        EXPECT_EQ(w.routing().expert(t, j * 2 + rk), e * 2 + rk);
        EXPECT_EQ(w.routing().weight(t, j * 2 + rk), w.logical_routing().weight(t, j));
        EXPECT_EQ(w.placement().gpu_of_expert(e * 2 + rk), e / 2 * 2 + rk);
      }
    }
  }
  // Each GPU's tokens: 8 per GPU (sequence parallel), and every shard row counted once.
  EXPECT_EQ(w.tokens().count(3), 8);
  EXPECT_EQ(w.summary()["tp"]["shard_rows"], 256);
  const Config bad = test::workload_config(r, "mixtral-8x7b", "[parallel]\ntp = 2\n[workload]\nredundant_experts = 8\n");
  EXPECT_THROW(Workload::build(WorkloadConfig::from(bad), ModelShape::from(bad)), UserError);
}

}  // namespace
}  // namespace moehub
