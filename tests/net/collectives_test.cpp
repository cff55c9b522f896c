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
// `tails` records when each store lands at GPU 1 (the tails; GPU 1 receives nothing else
// but the data).
struct SimplePair : PacketReceiver {
  Simulator sim;
  PacketNetwork net;
  AllToAll a2a;
  std::vector<int64_t> tails;
  SimplePair(bool acks, int steps, int planes = 4) : net(net_config(acks, planes), sim), a2a(net, sim, nccl(steps)) {
    net.set_receiver(1, this);
  }
  void deliver(Packet&& p) override {
    if (p.kind == PacketKind::Flag) tails.push_back(sim.now().ps());
  }
  int64_t run(uint64_t bytes) {
    a2a.start_pair(0, 1, bytes, 0, [] {});
    sim.run();
    return a2a.finish_time().ps();
  }
  uint64_t flags() const { return net.stats()["packets_delivered_by_kind"]["flag"]; }
  static NetConfig net_config(bool acks, int planes) {
    NetConfig c = test::h800_like(2, planes);
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
  // Two slots: the steps are copied in order. Step 0 fits the egress FIFO (8 KiB), so it is
  // handed over at once and step 1 follows it: 16 packets, 4 per plane, step 0's last leaving
  // at 2880 (landing at 608640, fenced at 1209280: its tail goes then and lands at 1810560),
  // step 1's at 8640 (landing at 614400, fenced at 1215040: its tail lands 601280 later). Step
  // 0's tail leaves before step 1's writes are acknowledged.
  SimplePair two_slots(true, 2);
  EXPECT_EQ(two_slots.run(2048), 1215040 + 601280);
  EXPECT_EQ(two_slots.tails, (std::vector<int64_t>{1209280 + 601280, 1215040 + 601280}));
}

TEST(Collectives, EachTailLeavesWhenItsStepIsFenced) {
  // 1.5 KiB in two slots: step 0 has 8 packets, step 1 (the rest) 4, copied in order: step 0's
  // last leaves at 2880 (lands at 608640, fenced at 1209280), step 1's four at 5760 (land at
  // 611520, fenced at 1212160). Each tail lands 601280 after its fence (steps copied at once
  // and interleaved would have fenced both at 1212160).
  SimplePair p(true, 2);
  EXPECT_EQ(p.run(1536), 1212160 + 601280);
  EXPECT_EQ(p.tails, (std::vector<int64_t>{1209280 + 601280, 1212160 + 601280}));
}

TEST(Collectives, ThirdStepIsCopiedAfterTheFirstTailIsPosted) {
  // One 200 GB/s plane: a 128 B write (9 flits) 720 ps per link, 601440 one way; an ack
  // (1 flit) 80 ps, 600160; a tail or head (2 flits) 160 ps, 600320. 3 KiB in three slots.
  // Steps 0 and 1 go at once (step 0 is handed over at 0); the barrier after step 1's copy
  // waits for step 0's post, so step 2 waits for step 0's fence.
  //  - step 0: packets 0-7, the last leaves at 5040, lands at 606480, acked at 1206640: tail 0
  //    goes then (1206640-1206800) and step 2 follows it.
  //  - step 1: packets 8-15, the last leaves at 10800, lands at 612240, acked at 1212400.
  //  - step 2: packets at 1206800 + 720 j; the last leaves at 1211840 and holds the link to
  //    1212560, lands at 1813280 and is acked at 2413440: tail 2 lands at 2413440 + 600320.
  //    Tail 1 leaves right behind it (1212560) and follows it through the switch, whose
  //    output sends it once that packet is through: it lands 160 ps after it, at 1813440.
  //    (Tail 0 lands at 1806960; GPU 1's
  //    acks and heads, 80 and 160 ps each, never delay an ack of step 2's writes; GPU 0's
  //    acks of the heads end before 2413440.)
  // Copied all at once and interleaved, the three steps would have ended at 1818480.
  SimplePair p(true, 3, 1);
  EXPECT_EQ(p.run(3072), 2413440 + 600320);
  EXPECT_EQ(p.tails, (std::vector<int64_t>{1206640 + 600320, 1813280 + 160, 2413440 + 600320}));
}

TEST(Collectives, FlowFidelityCopiesStepsInOrderToo) {
  // Two 1 KiB steps in two slots on one connection, flow fidelity (acks off: each fence passes
  // at its step's delivery). Step 0 alone: its payload has left at 5760 (1152 wire bytes at
  // 200 GB/s); step 1 starts then and has left at 11520; each lands 2880 + 600000 later, at
  // 608640 and 614400. Each tail then goes alone: 8 B (32 on the wire) leave in 160 ps and land
  // 640 + 600000 later. Both steps at once would have shared the link, landed together at
  // 614400 and sent both tails together (320 ps): the last would land at 1215360.
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.fidelity = NetFidelity::Flow;
  FlowNetwork net(c, sim);
  AllToAll a2a(net, sim, SimplePair::nccl(2));
  a2a.start_pair(0, 1, 2048, 0, [] {});
  sim.run();
  EXPECT_EQ(a2a.finish_time().ps(), 614400 + 160 + 600640);
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
