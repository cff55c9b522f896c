// The flow fidelity: max-min fair rates over the per-GPU link bundles, exact in closed form.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace moehub
