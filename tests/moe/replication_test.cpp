#include <gtest/gtest.h>

#include <numeric>

#include "moe/replication.h"
#include "moe/workload.h"
#include "moe_test_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

// Loads {100, 10, 50, 40}, 2 redundant experts, 3 GPUs (6 physical, 2 slots each).
// Replicate: 100/1 is the largest -> e0 (50 per copy); then e0 (50/2) ties e2 (50/1): the lower
// id -> e0 again (33.3 per copy). Per-copy loads: p0..p5 = e0 33.3, e1 10, e2 50, e3 40, e0 33.3,
// e0 33.3. Heaviest first: p2 50 -> GPU0, p3 40 -> GPU1, p0 33.3 -> GPU2 (least loaded),
// p4 33.3 -> GPU2 (33.3 < 40 < 50; now full), p5 33.3 -> GPU1 (40 < 50; full), p1 10 -> GPU0.
TEST(EplbReplicas, HandComputedPlacement) {
  const ReplicaPlan p = eplb_replicas({100, 10, 50, 40}, 2, 3);
  EXPECT_EQ(p.physical(), 6);
  EXPECT_EQ(p.logical_of, (std::vector<int32_t>{2, 1, 3, 0, 0, 0}));
  EXPECT_EQ(p.gpu_of, (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(p.replicas, (std::vector<std::vector<int32_t>>{{3, 4, 5}, {1}, {0}, {2}}));
}

TEST(EplbReplicas, UnevenSlotsAndTooFewExperts) {
  // 5 physical experts over 2 GPUs: at most 3 slots each. Loads {4, 3, 2, 1}: e0 is copied
  // (2 per copy); order p1 3, p0 2, p2 2, p4 2, p3 1 -> GPU0 (3|0), GPU1 (3|2), GPU1 (3|4),
  // GPU0 (5|4), GPU1 (5|5; GPU1 now full with 3).
  const ReplicaPlan p = eplb_replicas({4, 3, 2, 1}, 1, 2);
  EXPECT_EQ(p.logical_of, (std::vector<int32_t>{1, 0, 0, 2, 3}));
  EXPECT_EQ(p.gpu_of, (std::vector<int32_t>{0, 0, 1, 1, 1}));
  try {
    eplb_replicas({1, 1}, 1, 4);  // 3 physical experts for 4 GPUs
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.redundant_experts");
  }
}

// SGLang's static map: a local replica first; GPUs without one take the replicas in turn.
TEST(StaticDispatchMap, LocalFirstThenInTurn) {
  const ReplicaPlan p = eplb_replicas({100, 10, 50, 40}, 2, 3);  // e0 on GPUs 1 (p3) and 2 (p4, p5)
  const auto map = static_dispatch_map(p);
  EXPECT_EQ(map[0], (std::vector<int32_t>{3, 1, 0, 2}));  // GPU 0 has no e0: the first replica
  EXPECT_EQ(map[1], (std::vector<int32_t>{3, 1, 0, 2}));
  EXPECT_EQ(map[2], (std::vector<int32_t>{4, 1, 0, 2}));  // its own first copy
}

TEST(ReplicatedWorkload, PhysicalViewKeepsEveryRowsLogicalExpert) {
  const ParamRegistry r = test::workload_registry();
  // Qwen1.5-MoE: 60 experts do not divide over 8 GPUs; 4 redundant make 64 physical experts.
  const Config c = test::workload_config(r, "qwen1.5-moe-a2.7b",
                                         "[run]\ntokens = 512\n[workload]\nimbalance_std = 0.03\nredundant_experts = 4\n");
  const Workload w = Workload::build(WorkloadConfig::from(c), ModelShape::from(c));
  EXPECT_EQ(w.model().experts(), 64);
  EXPECT_EQ(w.logical_experts(), 60);
  EXPECT_EQ(w.routing().experts(), 64);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(w.placement().local_experts(g).size(), 8u);
  for (int64_t t = 0; t < w.routing().tokens(); ++t) {
    for (int64_t j = 0; j < w.routing().top_k(); ++j) {
      EXPECT_EQ(w.replicas().logical_of[static_cast<size_t>(w.routing().expert(t, j))], w.logical_routing().expert(t, j));
      EXPECT_EQ(w.routing().weight(t, j), w.logical_routing().weight(t, j));
    }
  }
  const auto s = w.summary();
  EXPECT_EQ(s["redundant_experts"], 4);
  EXPECT_EQ(s["replication"]["tokens_per_physical_expert"].size(), 64u);
  EXPECT_EQ(s["tokens_per_expert"].size(), 60u);
  // The hottest experts got the copies: the largest load per copy fell.
  EXPECT_LT(s["replication"]["max_tokens_per_physical_expert"].get<int64_t>(), s["max_tokens_per_expert"].get<int64_t>());
  // Another choice of replicas (as MoE-Hub's hub makes) keeps the placement.
  std::vector<int32_t> first(static_cast<size_t>(w.routing().rows()));
  for (size_t i = 0; i < first.size(); ++i) first[i] = w.replicas().replicas[static_cast<size_t>(w.logical_routing().expert_ids()[i])][0];
  const Workload v = w.with_replica_choice(first);
  EXPECT_EQ(v.placement().map(), w.placement().map());
  EXPECT_EQ(v.routing().expert_ids(), first);
}

TEST(ReplicatedWorkload, ExpertMapAndReplicasExcludeEachOther) {
  const ParamRegistry r = test::workload_registry();
  const Config c = test::workload_config(
      r, "mixtral-8x7b", "[workload]\nredundant_experts = 8\nexpert_map = [0, 1, 2, 3, 4, 5, 6, 7]\n");
  try {
    Workload::build(WorkloadConfig::from(c), ModelShape::from(c));
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.redundant_experts");
  }
}

}  // namespace
}  // namespace moehub
