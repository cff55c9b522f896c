// The flow fidelity: max-min fair rates over the per-GPU link bundles, exact in closed form.

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "net/flow_network.h"
#include "net/net_test_util.h"

namespace moehub {
namespace {

TEST(FlowNetwork, LoneTransferRunsAtLinkRateTimesHeaderEfficiency) {
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  Time done;
  net.transfer(0, 1, 1 << 20, 0, [&] { done = sim.now(); });
  ASSERT_EQ(net.rates().size(), 1u);
  EXPECT_NEAR(net.rates()[0], 200e9 * 128 / 144, 1e-3);
  sim.run();
  // 1 MiB x 144/128 at 200 GB/s = 5898.24 ns, then the last packet's switch link (2880 ps)
  // and 250 + 100 + 250 ns.
  EXPECT_EQ(done.ps(), 5898240 + 2880 + 600000);
}

// A message is one flow: it can always be sent and reaches the destination's receiver, whole,
// when the flow completes (a thread block's 1 MiB store here, not cut into packets).
TEST(FlowNetwork, AMessageIsOneFlowDeliveredToTheReceiver) {
  struct Recorder final : PacketReceiver {
    void deliver(Packet&& p) override {
      seen.push_back(p);
      at.push_back(now());
    }
    std::function<Time()> now;
    std::vector<Packet> seen;
    std::vector<Time> at;
  };
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  Recorder rx;
  rx.now = [&] { return sim.now(); };
  net.set_receiver(1, &rx);
  EXPECT_TRUE(net.can_send(0, 1 << 20));
  EXPECT_EQ(net.message_limit(), UINT32_MAX);
  Packet p;
  p.src = 0;
  p.dst = 1;
  p.payload_bytes = 1 << 20;
  p.cookie = 42;
  net.send(std::move(p));
  sim.run();
  ASSERT_EQ(rx.seen.size(), 1u);
  EXPECT_EQ(rx.seen[0].payload_bytes, 1u << 20);
  EXPECT_EQ(rx.seen[0].cookie, 42u);
  EXPECT_EQ(rx.at[0].ps(), 5898240 + 2880 + 600000);  // as the lone 1 MiB transfer above
}

TEST(FlowNetwork, IncastSharesTheDestinationLinksEvenly) {
  Simulator sim;
  NetConfig c = test::h800_like(8);
  c.write_ack = true;
  FlowNetwork net(c, sim);
  for (int g = 1; g < 8; ++g) net.transfer(g, 0, 1 << 20, 0, [] {});
  // GPU 0's ingress carries 7 flows x 144/128 wire bytes per payload byte.
  for (double r : net.rates()) EXPECT_NEAR(r / (200e9 * 128 / 144 / 7), 1.0, 1e-9);
  sim.run();
}

TEST(FlowNetwork, AcksLoadTheReverseDirection) {
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.write_ack = true;
  FlowNetwork net(c, sim);
  net.transfer(0, 1, 1 << 20, 0, [] {});
  net.transfer(1, 0, 1 << 20, 0, [] {});
  // Each GPU's egress carries its data (144 B per packet) and the acks of what it receives
  // (16 B per packet): 128 B of payload per 160 B of wire.
  for (double r : net.rates()) EXPECT_NEAR(r / (200e9 * 128 / 160), 1.0, 1e-9);
  sim.run();
}

TEST(FlowNetwork, MaxMinFairnessGivesLeftoverCapacityToUnconstrainedFlows) {
  Simulator sim;
  FlowNetwork net(test::h800_like(4), sim);
  // Flows 1->0 and 2->0 share GPU 0's ingress; 1->3 shares GPU 1's egress with 1->0.
  net.transfer(1, 0, 1 << 20, 0, [] {});
  net.transfer(2, 0, 1 << 20, 0, [] {});
  net.transfer(1, 3, 1 << 20, 0, [] {});
  const double link = 200e9 * 128 / 144;
  const auto r = net.rates();
  EXPECT_NEAR(r[0] / (link / 2), 1.0, 1e-9);
  EXPECT_NEAR(r[1] / (link / 2), 1.0, 1e-9);
  EXPECT_NEAR(r[2] / (link / 2), 1.0, 1e-9);  // GPU 1's egress: the other half
  sim.run();
  const auto s = net.stats();
  EXPECT_EQ(s["fidelity"], "flow");
  EXPECT_EQ(s["flows_completed"], 3);
}

// A hub's packets are one flow each: many equal flows of one pair share the link as one class.
TEST(FlowNetwork, ManyEqualFlowsOfOnePairShareTheLinkAndFinishTogetherInStartOrder) {
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) net.transfer(0, 1, 128, 0, [&, i] { order.push_back(i); });
  const auto r = net.rates();
  ASSERT_EQ(r.size(), 100u);
  for (double x : r) EXPECT_NEAR(x / (200e9 * 128 / 144 / 100), 1.0, 1e-9);
  sim.run();
  // 100 x 144 wire bytes at 200 GB/s = 72 ns, then the packet's switch link and 600 ns.
  EXPECT_NEAR(static_cast<double>(sim.now().ps()), 72000 + 2880 + 600000, 1);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

// Members of one class that started at different times progress together but finish apart.
TEST(FlowNetwork, ALaterFlowOfTheSameClassHalvesTheRateAndFinishesLater) {
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  Time a_done, b_done;
  net.transfer(0, 1, 1 << 20, 0, [&] { a_done = sim.now(); });
  sim.schedule_at(Time::from_ns(1000), [&] { net.transfer(0, 1, 1 << 20, 0, [&] { b_done = sim.now(); }); });
  sim.run();
  // Wire bytes: 1179648 per flow. A: 200000 alone in 1 us, the other 979648 at 100 GB/s
  // (9.79648 us); B: 979648 shared, then 200000 alone (1 us). Each then adds 602880 ps.
  EXPECT_NEAR(static_cast<double>(a_done.ps()), 10796480 + 602880, 1);
  EXPECT_NEAR(static_cast<double>(b_done.ps()), 11796480 + 602880, 1);
}

// net.flow_merge_pairs: a pair's messages are one flow served in start order, and the pair
// gets one share of a bottleneck however many messages it has in flight.
TEST(FlowNetwork, MergedPairsServeTheirMessagesInStartOrderAtOneShare) {
  Simulator sim;
  NetConfig c = test::h800_like(3);
  c.flow_merge_pairs = true;
  FlowNetwork net(c, sim);
  Time a_done, b_done, c_done;
  net.transfer(0, 1, 1 << 20, 0, [&] { a_done = sim.now(); });
  net.transfer(0, 1, 1 << 20, 0, [&] { b_done = sim.now(); });
  net.transfer(2, 1, 2 << 20, 0, [&] { c_done = sim.now(); });
  // GPU 1's ingress is split between the two pairs: 100 GB/s of wire each.
  for (double r : net.rates()) EXPECT_NEAR(r / (100e9 * 128 / 144), 1.0, 1e-9);
  sim.run();
  // A: 1179648 wire bytes at 100 GB/s = 11796.48 ns; B follows it (another 11796.48 ns) while
  // the other pair moves its 2 MiB at the same rate. Unmerged, A and B would take two thirds of
  // the link and both finish at 17694.72 ns. Each then adds 602880 ps.
  EXPECT_NEAR(static_cast<double>(a_done.ps()), 11796480 + 602880, 1);
  EXPECT_NEAR(static_cast<double>(b_done.ps()), 23592960 + 602880, 1);
  EXPECT_NEAR(static_cast<double>(c_done.ps()), 23592960 + 602880, 1);
}

// Flows of one pair with different header overheads are two classes: the link is shared by
// payload rate (max-min), each paying its own wire bytes.
TEST(FlowNetwork, FlowsOfOnePairWithDifferentPacketFillsAreSeparateClasses) {
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  net.transfer(0, 1, 1 << 20, 0, [] {});  // 144 wire bytes per 128 of payload
  net.transfer(0, 1, 64, 0, [] {});       // one 64 B packet: 80 wire bytes
  net.transfer(0, 1, 1 << 20, 0, [] {});  // joins the first class
  // Every flow gets the same payload rate r: 2 x 1.125 r + 1.25 r = 200 GB/s.
  const auto r = net.rates();
  ASSERT_EQ(r.size(), 3u);
  for (double x : r) EXPECT_NEAR(x / (200e9 / 3.5), 1.0, 1e-9);
  sim.run();
}

// Classes are removed when their last flow ends; a later flow must still find its own pair's
// class, not whichever class now sits where its class used to be.
TEST(FlowNetwork, AFlowFindsItsClassAfterAnEarlierClassWasRemoved) {
  Simulator sim;
  FlowNetwork net(test::h800_like(4), sim);
  net.transfer(0, 1, 128, 0, [] {});      // the first class: ends within a nanosecond
  net.transfer(2, 3, 1 << 20, 0, [] {});  // the second class, then the first
  net.transfer(1, 0, 1 << 20, 0, [] {});  // the third class, then the second
  std::vector<double> later;
  sim.schedule_at(Time::from_ns(100), [&] {
    net.transfer(2, 3, 1 << 20, 0, [] {});  // joins the 2->3 class
    later = net.rates();
  });
  sim.run();
  // The two 2->3 flows share GPU 2's egress; 1->0 has its links alone.
  const double link = 200e9 * 128 / 144;
  ASSERT_EQ(later.size(), 3u);
  EXPECT_NEAR(later[0] / (link / 2), 1.0, 1e-9);
  EXPECT_NEAR(later[1] / link, 1.0, 1e-9);
  EXPECT_NEAR(later[2] / (link / 2), 1.0, 1e-9);
}

// Each class's next completion sits in a heap: pairs on disjoint links finish at their own
// times, and one pair draining (a reallocation) leaves the others' rates and times alone.
TEST(FlowNetwork, DisjointPairsFinishAtTheirOwnTimesWhateverDrainsBeside) {
  Simulator sim;
  FlowNetwork net(test::h800_like(6), sim);
  Time a, b, c;
  net.transfer(0, 1, 1 << 20, 0, [&] { a = sim.now(); });
  net.transfer(2, 3, 2 << 20, 0, [&] { b = sim.now(); });
  net.transfer(4, 5, 512 << 10, 0, [&] { c = sim.now(); });
  const double link = 200e9 * 128 / 144;
  for (double r : net.rates()) EXPECT_NEAR(r / link, 1.0, 1e-12);
  std::vector<double> after;
  sim.schedule_at(Time::from_ns(4000), [&] { after = net.rates(); });  // 4->5 has drained
  sim.run();
  // Wire bytes at 200 GB/s: 1 MiB 5898.24 ns, 2 MiB 11796.48 ns, 512 KiB 2949.12 ns; then 602880 ps.
  EXPECT_EQ(c.ps(), 2949120 + 602880);
  EXPECT_EQ(a.ps(), 5898240 + 602880);
  EXPECT_EQ(b.ps(), 11796480 + 602880);
  ASSERT_EQ(after.size(), 2u);
  for (double r : after) EXPECT_NEAR(r / link, 1.0, 1e-12);
}

// Max-min rates decompose over connected components: when a class forms or drains, only its
// component is filled again, and the other component's rates stay exactly as they were.
TEST(FlowNetwork, AChangeInOneComponentLeavesTheOtherComponentsRatesExactlyAlone) {
  Simulator sim;
  FlowNetwork net(test::h800_like(6), sim);
  // Component A: 0->1 and 2->1 share GPU 1's ingress (half each). Component B: 3->4 alone.
  net.transfer(0, 1, 4 << 20, 0, [] {});
  net.transfer(2, 1, 4 << 20, 0, [] {});
  net.transfer(3, 4, 1 << 20, 0, [] {});
  const double link = 200e9 * 128 / 144;
  const auto before = net.rates();
  ASSERT_EQ(before.size(), 3u);
  EXPECT_NEAR(before[0] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(before[1] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(before[2] / link, 1.0, 1e-12);
  std::vector<double> joined, drained;
  // B gains 5->4 (GPU 4's ingress split in two), then both of B's pairs drain: A untouched.
  sim.schedule_at(Time::from_ns(1000), [&] {
    net.transfer(5, 4, 1 << 20, 0, [] {});
    joined = net.rates();
  });
  sim.schedule_at(Time::from_ns(15000), [&] { drained = net.rates(); });
  sim.run();
  ASSERT_EQ(joined.size(), 4u);
  EXPECT_EQ(joined[0], before[0]);
  EXPECT_EQ(joined[1], before[1]);
  EXPECT_NEAR(joined[2] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(joined[3] / (link / 2), 1.0, 1e-12);
  // At 15 us B has drained (3->4 at 10.8 us: 1 us alone, 979648 wire bytes at 100 GB/s; 5->4
  // at 11.8 us) and A, 4 MiB at half rate (47.2 us), still runs at the same rates.
  ASSERT_EQ(drained.size(), 2u);
  EXPECT_EQ(drained[0], before[0]);
  EXPECT_EQ(drained[1], before[1]);
}

// stream_sent: a flow has no queue at its source, so its bytes are handed over when its
// payload has left (1 MiB alone: 5898240 ps, as above), before the last packet's trip.
TEST(FlowNetwork, StreamIsHandedOverWhenItsPayloadHasLeft) {
  Simulator sim;
  FlowNetwork net(test::h800_like(2), sim);
  Time sent;
  Time done;
  net.stream_sent(0, 1, 1 << 20, 0, StreamOptions{}, [&] { sent = sim.now(); }, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(sent.ps(), 5898240);
  EXPECT_EQ(done.ps(), 5898240 + 2880 + 600000);
  EXPECT_TRUE(net.conservation_violations().empty());
}

// A resource whose classes all freeze at another's bottleneck leaves the filling, and the next
// round's bottleneck is found among the rest: GPU 2's ingress carries 0->2 and two 3->2 flows
// (weight 3), so they freeze at X / 3 (X: a link's payload rate); GPU 3's egress then has no
// class left, and GPU 0's egress (0->1 and 0->2) has X / 3 of room for 0->1, which reaches 2X / 3.
TEST(FlowNetwork, AResourceLeavesTheFillingWhenItsClassesFreezeElsewhere) {
  Simulator sim;
  FlowNetwork net(test::h800_like(4), sim);
  net.transfer(0, 1, 1 << 20, 0, [] {});
  net.transfer(0, 2, 1 << 20, 0, [] {});
  net.transfer(3, 2, 1 << 20, 0, [] {});
  net.transfer(3, 2, 1 << 20, 0, [] {});
  const double x = 200e9 * 128 / 144;
  const std::vector<double> r = net.rates();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NEAR(r[0] / (x * 2 / 3), 1.0, 1e-12);
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(r[i] / (x / 3), 1.0, 1e-12);
  sim.run();
}

// As above, with more than half of the filling's resources out after the first round (GPU 0's
// ingress and GPUs 2's and 3's egress), so the rest are moved up in order: 1->0, 2->0 and 3->0
// freeze at X / 3 on GPU 0's ingress; then GPU 1's egress (room X / 3) caps 1->4 at 2X / 3
// before GPU 4's ingress (room 2X / 3) fills.
TEST(FlowNetwork, TheFillingGoesOnAfterMostResourcesAreOut) {
  Simulator sim;
  FlowNetwork net(test::h800_like(5), sim);
  for (int g = 1; g < 4; ++g) net.transfer(g, 0, 1 << 20, 0, [] {});
  net.transfer(1, 4, 1 << 20, 0, [] {});
  const double x = 200e9 * 128 / 144;
  const std::vector<double> r = net.rates();
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(r[i] / (x / 3), 1.0, 1e-12);
  EXPECT_NEAR(r[3] / (x * 2 / 3), 1.0, 1e-12);
  sim.run();
}

}  // namespace
}  // namespace moehub
