// Collectives: NCCL peer order, all-to-all efficiency in both fidelities and their agreement,
// thread-block puts.

#include <gtest/gtest.h>

#include "net/collectives.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "net/packet_network.h"
#include "net/alltoall_test_util.h"

namespace moehub {
namespace {

TEST(Collectives, NcclPeerOrderIsTheQuadraticDeltaSequence) {
  EXPECT_EQ(nccl_p2p_deltas(8), (std::vector<int>{0, 1, 3, 6, 2, 7, 5, 4}));
  // n = 6: pow2up = 8; deltas 0 1 3 6(skip) 2 7(skip) 5 4.
  EXPECT_EQ(nccl_p2p_deltas(6), (std::vector<int>{0, 1, 3, 2, 5, 4}));
  EXPECT_EQ(nccl_p2p_deltas(1), (std::vector<int>{0}));
}

TEST(Collectives, SmallPairRunsOnFewerChannels) {
  // 512 KiB chunk: one channel per started 64 KiB, at most channels_per_peer = 4.
  const NcclConfig cfg;
  EXPECT_EQ(nccl_pair_channels(cfg, 40 * 1024), 1);    // 40/64 -> 1
  EXPECT_EQ(nccl_pair_channels(cfg, 64 * 1024 + 1), 2);
  EXPECT_EQ(nccl_pair_channels(cfg, 130 * 1024), 3);   // 130/64 -> 3
  EXPECT_EQ(nccl_pair_channels(cfg, 200 * 1024), 4);   // 200/64 -> 4
  EXPECT_EQ(nccl_pair_channels(cfg, 30ULL << 20), 4);  // capped at channels_per_peer
}

TEST(Collectives, UniformMatrixSpreadsEveryByteOverTheOthers) {
  const auto m = AllToAll::uniform(4, 10);
  for (int s = 0; s < 4; ++s) {
    uint64_t sum = 0;
    for (int d = 0; d < 4; ++d) sum += m(s, d);
    EXPECT_EQ(sum, 10u);
    EXPECT_EQ(m(s, s), 0u);
  }
}

using test::alltoall_gbps;
using test::h800_with_acks;
using test::kCeilingGBps;


TEST(Collectives, FlowAllToAllUpTo256MBApproachesTheCeiling) {
  double previous = 0;
  for (uint64_t mb : {1, 16, 256}) {
    const double g = alltoall_gbps(NetFidelity::Flow, mb << 20);
    EXPECT_LT(g, kCeilingGBps);
    EXPECT_GT(g, previous);
    previous = g;
  }
  EXPECT_GT(previous, 0.995 * kCeilingGBps);
}

TEST(Collectives, AllToAllVSkipsEmptyPairs) {
  Simulator sim;
  PacketNetwork net(test::h800_like(4), sim);
  AllToAll a2a(net, sim, NcclConfig{});
  PerPair<uint64_t> m(4, 0);
  m(1, 2) = 128;
  bool done = false;
  a2a.start(m, 0, [&] { done = true; });
  sim.run();
  EXPECT_TRUE(done);
  // 128 B is LL (<= 1 channel x 16 KiB): 256 B of lines, two 128 B packets on two of the four
  // planes side by side, so they arrive when one packet alone would.
  EXPECT_EQ(a2a.finish_time().ps(), 2880 + 250000 + 100000 + 2880 + 250000);
  EXPECT_EQ(net.stats()["packets_delivered"], 2);
}

// A Simple pair 0 -> 1 on one connection of 1 KiB steps in `steps` slots, packet model.
// Unloaded one-way times (h800_like: 50 GB/s per plane, 250 + 100 + 250 ns of latency):
// a 128 B write (9 flits) 2880 ps per link, 605760 in all; an ack (1 flit) 320 per link,
// 600640 in all; a tail or head store (8 B: 2 flits) 640 per link, 601280 in all.
struct SimplePair {
  Simulator sim;
  PacketNetwork net;
  AllToAll a2a;
  SimplePair(bool acks, int steps) : net(net_config(acks), sim), a2a(net, sim, nccl(steps)) {}
  int64_t run(uint64_t bytes) {
    a2a.start_pair(0, 1, bytes, 0, [] {});
    sim.run();
    return a2a.finish_time().ps();
  }
  uint64_t flags() const { return net.stats()["packets_delivered_by_kind"]["flag"]; }
  static NetConfig net_config(bool acks) {
    NetConfig c = test::h800_like(2);
    c.write_ack = acks;
    return c;
  }
  static NcclConfig nccl(int steps) {
    NcclConfig cfg;
    cfg.chunk_bytes = 1024;
    cfg.steps = steps;
    cfg.channels_per_peer = 1;
    cfg.ll_threshold_bytes = 0;  // Simple: the slots and their stores are its protocol
    return cfg;
  }
};

TEST(Collectives, SimpleStepIsReadAfterTheFenceAndTheTailStore) {
  // 1 KiB: 8 packets, 2 per plane; the last leaves at 2880 and lands at 608640. Its ack is
  // back at 1209280 (the fence passes), the tail store lands at 1810560: the receiver reads.
  SimplePair p(true, 1);
  EXPECT_EQ(p.run(1024), 608640 + 600640 + 601280);
  // The tail and, after the read, the head: two 8-byte stores.
  EXPECT_EQ(p.flags(), 2u);
}

TEST(Collectives, SimpleStepWithoutAcksFencesAtDelivery) {
  // No acks to wait for: the fence passes when the writes land (608640).
  SimplePair p(false, 1);
  EXPECT_EQ(p.run(1024), 608640 + 601280);
}

TEST(Collectives, ChunkSlotsLimitDataInFlight) {
  // Two 1 KiB steps through one slot: step 1 waits for step 0's head store to land.
  // Step 0 is read at 1810560 (above); the head lands at 1810560 + 601280 = 2411840. The
  // head's ack leaves GPU 0 first (responses go first) and holds one plane for 320 ps, so
  // step 1's last packet leaves at 3200 instead of 2880: it lands at 2411840 + 3200 + 605760
  // = 3020800, its ack is back at 3621440 and its tail lands at 4222720.
  SimplePair one_slot(true, 1);
  EXPECT_EQ(one_slot.run(2048), 4222720);
  EXPECT_EQ(one_slot.flags(), 4u);
  // Two slots: both steps leave at once (16 packets, 4 per plane, the last at 8640, landing
  // at 614400); step 0's fence passes at its own last ack but its tail is posted first, then
  // step 1's, when their acks are back: step 1's at 614400 + 600640 = 1215040; its tail store
  // leaves right behind step 0's on another idle plane and lands at 1215040 + 601280.
  SimplePair two_slots(true, 2);
  EXPECT_EQ(two_slots.run(2048), 1215040 + 601280);
}

TEST(Collectives, TailsArePostedInStepOrder) {
  // 1.5 KiB in two slots: step 0 has 8 packets, step 1 (the rest) 4, sent alternately, so
  // step 1's last packet is the 8th (leaves at 2880, lands at 608640) and step 0's the 12th
  // (leaves at 5760, lands at 611520). Step 1's fence passes first, at 1209280, but its tail
  // (value 2, which would tell the receiver both steps are there) waits for step 0's fence at
  // 611520 + 600640 = 1212160; both tails leave then and land 601280 later.
  SimplePair p(true, 2);
  EXPECT_EQ(p.run(1536), 1212160 + 601280);
}

// Finish time of one 16 KiB pair (0 -> 1) on the packet model with the given LL threshold.
int64_t sixteen_kib_pair_ps(uint64_t ll_threshold) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  NcclConfig cfg;
  cfg.ll_threshold_bytes = ll_threshold;
  AllToAll a2a(net, sim, cfg);
  PerPair<uint64_t> m(2, 0);
  m(0, 1) = 16 * 1024;
  a2a.start(m, 0, [] {});
  sim.run();
  return a2a.finish_time().ps();
}

TEST(Collectives, SixteenKibPairUsesLlAtTwiceTheWireBytes) {
  EXPECT_TRUE(nccl_pair_uses_ll(NcclConfig{}, 16 * 1024, 1));
  EXPECT_FALSE(nccl_pair_uses_ll(NcclConfig{}, 16 * 1024 + 1, 1));
  EXPECT_TRUE(nccl_pair_uses_ll(NcclConfig{}, 64 * 1024, 4));
  // One channel (16 KiB < 64 KiB). LL: 32 KiB of lines = 256 packets, 64 per plane, 2880 ps
  // each; the last leaves at 64 x 2880 and arrives 600000 + 2880 later. Simple: 32 per plane,
  // then (acks off: the fence passes at delivery) the tail store's 601280.
  EXPECT_EQ(sixteen_kib_pair_ps(16 * 1024), 64 * 2880 + 600000 + 2880);
  EXPECT_EQ(sixteen_kib_pair_ps(0), 32 * 2880 + 600000 + 2880 + 601280);
}

TEST(Collectives, ThreadBlockPutCompletesWhenEveryStoreIsAcknowledged) {
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  Time done;
  thread_block_put(net, 0, 1, 64, 64, 0, [&] { done = sim.now(); });
  sim.run();
  // A 64 B store: 5 flits = 80 B = 1600 ps per link; there 1600 + 600000 + 1600 ps, the ack
  // back in 320 + 600000 + 320 ps.
  EXPECT_EQ(done.ps(), 603200 + 600640);
}

TEST(Collectives, ThreadBlockPutOfSmallStoresPaysAHeaderPerStore) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2, 1), sim);  // acks off: complete on delivery
  Time done;
  thread_block_put(net, 0, 1, 32 * 10, 32, 0, [&] { done = sim.now(); });
  sim.run();
  // 1 plane at 200 GB/s; 10 stores of 32 B = 3 flits = 48 B = 240 ps each, back to back.
  EXPECT_EQ(done.ps(), 10 * 240 + 250000 + 100000 + 240 + 250000);
  EXPECT_EQ(net.stats()["links"][0]["bytes"], 480);
}

}  // namespace
}  // namespace moehub
