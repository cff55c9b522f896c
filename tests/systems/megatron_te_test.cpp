// megatron-te: the mechanism-level facts of Megatron's all-to-all dispatcher, and the NCCL
// rank collectives it runs on.

#include <gtest/gtest.h>

#include "systems/nccl_rank_collectives.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

TEST(MegatronTe, VerifyPasses) {
  SystemRun r("megatron-te", {});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}

TEST(MegatronTe, VerifyPassesWithSkewAndAGpuWithoutExperts) {
  // GPU 3 holds no expert, GPU 0 three: empty splits, empty GEMMs, uneven receive buffers.
  SystemRun r("megatron-te", {"run.gpus=4", "workload.imbalance_std=0.05", "workload.expert_map=[0,0,0,1,1,2,2,1]"});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}

TEST(MegatronTe, ExactlyOneHostSyncPerGpu) {
  SystemRun r("megatron-te", {"run.gpus=4"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) EXPECT_EQ(r.count(g, Activity::Synchronisation), 1) << "GPU " << g;
}

TEST(MegatronTe, NoExpertGemmBeforeTheDispatchAllToAllEndsAndNoCombineBeforeTheLastGemm) {
  SystemRun r("megatron-te", {"run.gpus=4"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) {
    const PhaseMarks& p = r.cluster->phases(g);
    const auto [first_gemm, last_expert] = r.span(g, Activity::ExpertCompute);
    ASSERT_TRUE(p.dispatch_end && p.combine_start && p.gemm1_end);
    EXPECT_GE(first_gemm, *p.dispatch_end) << "GPU " << g;
    EXPECT_GE(*p.combine_start, last_expert) << "GPU " << g;
    // The dispatch starts only after the host sync returned.
    EXPECT_GE(*p.dispatch_start, r.span(g, Activity::Synchronisation).second) << "GPU " << g;
  }
}

TEST(MegatronTe, LayerTimeGrowsWithTokens) {
  SystemRun small("megatron-te", {"run.tokens=256"}, false);
  SystemRun large("megatron-te", {"run.tokens=4096"}, false);
  small.run();
  large.run();
  EXPECT_GT(large.layer(), small.layer());
}

// --- the rank collectives ---

struct CollectiveRig {
  SystemRun run;
  explicit CollectiveRig(int gpus) : run("ideal", {"run.gpus=" + std::to_string(gpus), "net.fidelity=flow"}, false) {}
  Cluster& cluster() { return *run.cluster; }
};

TEST(PairwiseAllToAll, APairMovesOnlyOnceBothRanksJoined) {
  // Rank 1 joins 10 us late: rank 0's part ends exactly 10 us later than when both join at
  // once, since its only pair cannot start earlier.
  auto done_at = [](Time late) {
    CollectiveRig rig(2);
    std::vector<Time> done(2);
    PairwiseAllToAll a2a(rig.cluster(), {{0, 1 << 20}, {0, 0}}, nullptr,
                         [&](int g) { done[static_cast<size_t>(g)] = rig.cluster().sim().now(); });
    a2a.join(0);
    rig.cluster().sim().schedule_in(late, [&] { a2a.join(1); });
    rig.cluster().sim().run();
    return done;
  };
  const std::vector<Time> together = done_at(Time::zero());
  const std::vector<Time> late = done_at(Time::from_us(10));
  EXPECT_GT(together[0], Time::zero());
  EXPECT_EQ(late[0], together[0] + Time::from_us(10));
  EXPECT_EQ(late[1], together[1] + Time::from_us(10));
}

TEST(PairwiseAllToAll, ARankWithNothingToMoveEndsAtItsJoin) {
  CollectiveRig rig(2);
  std::vector<Time> done(2, Time::max());
  std::vector<std::pair<int, int>> pairs;
  PairwiseAllToAll a2a(rig.cluster(), {{64, 0}, {0, 0}}, [&](int s, int d) { pairs.push_back({s, d}); },
                       [&](int g) { done[static_cast<size_t>(g)] = rig.cluster().sim().now(); });
  rig.cluster().sim().schedule_in(Time::from_us(3), [&] { a2a.join(1); });
  a2a.join(0);
  rig.cluster().sim().run();
  EXPECT_EQ(done[1], Time::from_us(3));   // no pair involves rank 1
  EXPECT_LT(done[0], Time::from_us(3));   // its self copy only: 128 B through HBM
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0], std::make_pair(0, 0));
}

TEST(RingAllGather, TakesNMinusOneSequentialHops) {
  auto done_at = [](int gpus) {
    CollectiveRig rig(gpus);
    Time last = Time::zero();
    int ranks = 0;
    RingAllGather ag(rig.cluster(), 64, [&](int) {
      last = max(last, rig.cluster().sim().now());
      ++ranks;
    });
    for (int g = 0; g < gpus; ++g) ag.join(g);
    rig.cluster().sim().run();
    EXPECT_EQ(ranks, gpus);
    return last;
  };
  const Time hop = done_at(2);
  EXPECT_GT(hop, Time::zero());
  EXPECT_EQ(done_at(4), hop * 3);
  EXPECT_EQ(done_at(8), hop * 7);
}

}  // namespace
}  // namespace moehub
