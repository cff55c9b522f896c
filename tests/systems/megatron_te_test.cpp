// megatron-te: the mechanism-level facts of Megatron's all-to-all dispatcher, and the NCCL
// collectives it runs on (the grouped all-to-all every NCCL-based system shares).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "platform/nccl_group_call.h"
#include "platform/nccl_ring.h"
#include "platform/nccl_ring_all_gather.h"
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

// Permutation 1's two masked_selects (their nonzero counts) and the D2H event's synchronize.
TEST(MegatronTe, ThreeHostSyncsPerGpu) {
  SystemRun r("megatron-te", {"run.gpus=4"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) EXPECT_EQ(r.count(g, Activity::Synchronisation), 3) << "GPU " << g;
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

// Without the training-time aux loss the router is 15 kernels and 13 framework ops.
TEST(MegatronTe, InferenceRouterHasNoAuxLossOps) {
  SystemRun r("megatron-te", {"run.gpus=4", "model.experts=4", "model.top_k=1", "run.tokens=4096",
                              "kernels.megatron_router_aux_loss=false"},
              false);
  r.run();
  const gpu::HostOps o = r.cluster->host(0).ops();
  EXPECT_EQ(o.kernels, 23u + 6u + 1u + 16u - 2u + 2u + 1u + 1u + 2u + 2u - 8u);  // E_l 1: no sorts, one tile
  EXPECT_EQ(o.framework_ops, 26u + 12u + 6u + 11u + 1u + 2u + 1u + 2u + 15u - 13u + 6u);
}

// EP+TP (parallel.tp): the shards' partial outputs reduce to the reference layer, with the EP
// all-to-all (TP 2 on 4 GPUs: EP 2) and without it (TP 4: EP 1).
TEST(MegatronTe, VerifyPassesUnderTp) {
  for (const char* tp : {"2", "4"}) {
    SystemRun r("megatron-te", {"run.gpus=4", "parallel.tp=" + std::string(tp), "workload.imbalance_std=0.05"});
    r.run();
    EXPECT_TRUE(r.functional->passed()) << "TP " << tp << " " << r.functional->report().dump(2);
  }
}

// --- the rank collectives ---

struct CollectiveRig {
  SystemRun run;
  explicit CollectiveRig(int gpus) : run("ideal", {"run.gpus=" + std::to_string(gpus), "net.fidelity=flow"}, false) {}
  Cluster& cluster() { return *run.cluster; }
};

// Launches GPU g's kernel of `call` at `at`; records the pairs in the order they start.
struct GroupCallRig : CollectiveRig {
  std::vector<std::pair<int, int>> started;
  std::vector<Time> delivered_at;
  GroupCallRig(int gpus) : CollectiveRig(gpus) {}
  void hook(NcclGroupCall& call) {
    call.set_hooks([this](int s, int d) { started.push_back({s, d}); },
                   [this](int, int) { delivered_at.push_back(cluster().sim().now()); });
  }
  void launch_at(NcclGroupCall& call, int g, Time at) {
    cluster().sim().schedule_in(at, [this, &call, g] { call.launch(g, cluster().stream(g)); });
  }
};

TEST(NcclGroupCall, APairMovesOnlyOnceBothKernelsAreUp) {
  // Rank 1's kernel comes 10 us late: the only pair lands exactly 10 us later.
  auto landed = [](Time late) {
    GroupCallRig rig(2);
    NcclGroupCall call(rig.cluster(), "a2a", {{0, 1 << 20}, {0, 0}}, NcclKernelShape{});
    rig.hook(call);
    rig.launch_at(call, 0, Time::zero());
    rig.launch_at(call, 1, late);
    rig.cluster().sim().run();
    EXPECT_EQ(rig.delivered_at.size(), 1u);
    EXPECT_TRUE(call.done_at(0) && call.done_at(1));
    return rig.delivered_at.at(0);
  };
  const Time together = landed(Time::zero());
  EXPECT_GT(together, Time::zero());
  EXPECT_EQ(landed(Time::from_us(10)), together + Time::from_us(10));
}

TEST(NcclGroupCall, ALateRankStartsItsPairsInNcclPeerOrder) {
  // Four ranks, every pair non-empty; rank 3 comes last, so all of its pairs start when it is
  // up, in the order of its rounds: deltas 0, 1, 3, 2 (send to 3 + d, receive from 3 - d).
  GroupCallRig rig(4);
  NcclGroupCall call(rig.cluster(), "a2a", PerPair<uint64_t>(4, 4096), NcclKernelShape{});
  rig.hook(call);
  for (int g = 0; g < 3; ++g) rig.launch_at(call, g, Time::zero());
  rig.launch_at(call, 3, Time::from_us(5));
  rig.cluster().sim().run();
  ASSERT_EQ(rig.started.size(), 16u);
  const std::vector<std::pair<int, int>> last(rig.started.end() - 7, rig.started.end());
  const std::vector<std::pair<int, int>> expected{{3, 3}, {3, 0}, {2, 3}, {3, 2}, {0, 3}, {3, 1}, {1, 3}};
  EXPECT_EQ(last, expected);
}

TEST(NcclGroupCall, ARankWithNothingToMoveTakesNoPart) {
  GroupCallRig rig(2);
  NcclGroupCall call(rig.cluster(), "a2a", {{64, 0}, {0, 0}}, NcclKernelShape{});
  rig.hook(call);
  EXPECT_TRUE(call.participates(0));  // its self copy
  EXPECT_FALSE(call.participates(1));
  rig.launch_at(call, 0, Time::zero());
  rig.launch_at(call, 1, Time::zero());  // launches nothing
  rig.cluster().sim().run();
  ASSERT_EQ(rig.started.size(), 1u);
  EXPECT_EQ(rig.started[0], std::make_pair(0, 0));
  EXPECT_TRUE(call.done_at(0));
  EXPECT_FALSE(call.resident_at(1));
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

// --- the TP group's ring chains (NcclRing) ---

// A lone transfer of `bytes` from GPU 0 to GPU 1 (the network's own timing, docs/network.md).
Time lone_transfer(uint64_t bytes) {
  CollectiveRig rig(4);
  Time at;
  rig.cluster().network().transfer(0, 1, bytes, 0, [&] { at = rig.cluster().sim().now(); });
  rig.cluster().sim().run();
  return at;
}

// One chain rooted at GPU 0 over the ring 0-1-2-3, one slice long (nccl.chunk_bytes, slice
// steps 1); returns when each rank's part ended, in ns after the kernels were up.
std::vector<double> one_slice_chain(RingOp op) {
  CollectiveRig rig(4);
  const uint64_t slice = rig.cluster().nccl().chunk_bytes;
  RingSpec spec;
  spec.rings = {{0, 1, 2, 3}};
  spec.block = PerGpu<uint64_t>(4, 0);
  spec.block[0] = slice;
  spec.op = op;
  NcclRing ring(rig.cluster(), "ring", spec, NcclKernelShape{});
  std::vector<double> done(4);
  ring.set_hooks([&](int root, int rank) {
    EXPECT_EQ(root, 0);
    done[static_cast<size_t>(rank)] = (rig.cluster().sim().now() - *ring.resident_at(0)).us() * 1e3;
  });
  for (int g = 0; g < 4; ++g) ring.launch(g, rig.cluster().stream(g));
  rig.cluster().sim().run();
  for (int g = 0; g < 4; ++g) {
    EXPECT_TRUE(ring.done_at(g));
    EXPECT_EQ(ring.resident_at(g), ring.resident_at(0));  // every kernel up at once
  }
  return done;
}

// By hand, dgx-h800: a slice is nccl_chunk_bytes = 512 KiB; an HBM pass over f slices takes
// f x 524288 B / (3.35 TB/s x hbm_efficiency 0.87 = 2914.5 B/ns) = f x 179.89 ns; a hop is
// the network's lone 512 KiB transfer (3452 ns on the flow model today). Tolerance 1 ns: the
// four spinning NCCL CTAs' flag loads take a few ps of HBM from each pass.
double pass_ns(double slices) { return slices * 524288.0 / 2914.5; }

TEST(NcclRing, BroadcastForwardsRankToRankWithACopyPassAtEachRank) {
  // nccl broadcast.h:44-54: every rank reads a slice and writes it out (2 slices of HBM), then
  // the slice crosses to the ring neighbour: rank 3 (the last) is done after 4 passes and 3
  // hops (4 x 359.78 + 3 x 3452 = 11795.1 ns); rank r < 3 once its send has landed.
  const double hop = lone_transfer(512 * 1024).us() * 1e3;
  const std::vector<double> done = one_slice_chain(RingOp::Broadcast);
  EXPECT_NEAR(done[3], 4 * pass_ns(2) + 3 * hop, 1.0);
  EXPECT_NEAR(done[0], pass_ns(2) + hop, 1.0);
  EXPECT_NEAR(done[2], 3 * pass_ns(2) + 3 * hop, 1.0);
}

TEST(NcclRing, ReduceAddsAtEveryRankAndEndsAtTheRoot) {
  // nccl reduce.h:34-51 with root 0 on ring 0-1-2-3: rank 1 sends its input (1 slice read),
  // ranks 2 and 3 read the received slice and their input and send the sum (2), the root reads
  // both and writes the result (3): 179.89 + 2 x 359.78 + 539.67 + 3 x 3452 = 11795.1 ns.
  const double hop = lone_transfer(512 * 1024).us() * 1e3;
  const std::vector<double> done = one_slice_chain(RingOp::Reduce);
  EXPECT_NEAR(done[0], pass_ns(1) + 2 * pass_ns(2) + pass_ns(3) + 3 * hop, 1.0);
  EXPECT_NEAR(done[1], pass_ns(1) + hop, 1.0);
  EXPECT_NEAR(done[3], pass_ns(1) + 2 * pass_ns(2) + 3 * hop, 1.0);
}

TEST(NcclRing, ASliceWaitsForAFreeSlotInTheNextRanksFifo) {
  // Two ranks; rank 1's kernel comes 50 us late. The FIFO holds 8 steps of 512 KiB: 8 slices
  // of one step (broadcast, reduce) or 4 of two (all-gather, reduce-scatter). A block that fits
  // is all sent before rank 1 is up; one slice more leaves only after rank 1 has passed over
  // the first one and the head update has crossed back.
  const auto sender_done_after_receiver_up = [](uint32_t steps, int slices) {
    CollectiveRig rig(2);
    RingSpec spec;
    spec.rings = {{0, 1}};
    spec.block = PerGpu<uint64_t>(2, 0);
    spec.block[0] = rig.cluster().nccl().chunk_bytes * steps * static_cast<uint64_t>(slices);
    spec.slice_steps = {steps};
    NcclRing ring(rig.cluster(), "ring", spec, NcclKernelShape{});
    ring.launch(0, rig.cluster().stream(0));
    rig.cluster().sim().schedule_in(Time::from_us(50), [&] { ring.launch(1, rig.cluster().stream(1)); });
    rig.cluster().sim().run();
    EXPECT_TRUE(ring.done_at(0) && ring.resident_at(1));
    EXPECT_GT(*ring.resident_at(1), *ring.resident_at(0) + Time::from_us(49));
    return *ring.done_at(0) > *ring.resident_at(1);
  };
  ASSERT_EQ(CollectiveRig(2).cluster().nccl().steps, 8);
  EXPECT_FALSE(sender_done_after_receiver_up(1, 8));
  EXPECT_TRUE(sender_done_after_receiver_up(1, 9));
  EXPECT_FALSE(sender_done_after_receiver_up(2, 4));
  EXPECT_TRUE(sender_done_after_receiver_up(2, 5));
}

}  // namespace
}  // namespace moehub
