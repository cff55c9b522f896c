// net.flow_realloc_interval (a stated reduction): full max-min allocations at most once per
// interval; in between, new classes share only the spare capacity and the others keep their
// rates. Every expectation below is computed by hand.

#include <gtest/gtest.h>

#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "sim/error.h"

namespace moehub {
namespace {

NetConfig interval_config(int gpus) {
  NetConfig c = test::h800_like(gpus);
  c.flow_merge_pairs = true;
  c.flow_realloc_interval = Time::from_ns(10000);
  return c;
}

// A: 0->1, 4 MiB, alone at t = 0 (a full allocation). B: 2->1, 256 KiB, forms at 1 us inside
// the interval: GPU 1's ingress has no spare, so B waits at rate 0 until the full allocation
// at 10 us splits the link. B drains at 12.94912 us, inside the next interval: A keeps its half
// until the full allocation at 20 us. Wire bytes are 144 per 128 of payload, 200 GB/s per link.
TEST(FlowReallocInterval, ANewClassWaitsForTheFullAllocationAndADrainFreesItsShareAtTheNext) {
  Simulator sim;
  FlowNetwork net(interval_config(3), sim);
  const double link = 200e9 * 128 / 144;
  Time a_done, b_done;
  std::vector<double> at_5us, at_11us, at_15us;
  net.transfer(0, 1, 4 << 20, 0, [&] { a_done = sim.now(); });
  sim.schedule_at(Time::from_ns(1000), [&] { net.transfer(2, 1, 256 << 10, 0, [&] { b_done = sim.now(); }); });
  sim.schedule_at(Time::from_ns(5000), [&] { at_5us = net.rates(); });
  sim.schedule_at(Time::from_ns(11000), [&] { at_11us = net.rates(); });
  sim.schedule_at(Time::from_ns(15000), [&] { at_15us = net.rates(); });
  sim.run();
  ASSERT_EQ(at_5us.size(), 2u);
  EXPECT_NEAR(at_5us[0] / link, 1.0, 1e-12);
  EXPECT_EQ(at_5us[1], 0.0);
  ASSERT_EQ(at_11us.size(), 2u);
  EXPECT_NEAR(at_11us[0] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(at_11us[1] / (link / 2), 1.0, 1e-12);
  ASSERT_EQ(at_15us.size(), 1u);
  EXPECT_NEAR(at_15us[0] / (link / 2), 1.0, 1e-12);
  // B: 294912 wire bytes at 100 GB/s from 10 us = 2949.12 ns. A: 2000000 wire bytes by 10 us,
  // 294912 + 705088 more at 100 GB/s by 20 us, the last 1718592 at 200 GB/s (8592.96 ns).
  // Each then adds the last packet's plane link (2880 ps) and 250 + 100 + 250 ns.
  EXPECT_NEAR(static_cast<double>(b_done.ps()), 12949120 + 602880, 1);
  EXPECT_NEAR(static_cast<double>(a_done.ps()), 28592960 + 602880, 1);
}

// A class formed between full allocations on idle links gets their whole spare at once, and
// two such classes share a link max-min among themselves.
TEST(FlowReallocInterval, NewClassesShareTheSpareCapacityMaxMinAtOnce) {
  Simulator sim;
  FlowNetwork net(interval_config(6), sim);
  const double link = 200e9 * 128 / 144;
  std::vector<double> later;
  net.transfer(0, 1, 4 << 20, 0, [] {});
  sim.schedule_at(Time::from_ns(1000), [&] {
    net.transfer(2, 3, 4 << 20, 0, [] {});  // idle links: the whole link
    net.transfer(4, 5, 4 << 20, 0, [] {});  // 4 and 5 share GPU 5's ingress
    net.transfer(3, 5, 4 << 20, 0, [] {});
    later = net.rates();
  });
  sim.run();
  ASSERT_EQ(later.size(), 4u);
  EXPECT_NEAR(later[0] / link, 1.0, 1e-12);
  EXPECT_NEAR(later[1] / link, 1.0, 1e-12);
  EXPECT_NEAR(later[2] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(later[3] / (link / 2), 1.0, 1e-12);
}

TEST(FlowReallocInterval, NeedsMergedPairs) {
  NetConfig c = interval_config(2);
  c.flow_merge_pairs = false;
  try {
    c.validate();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.flow_realloc_interval");
  }
}

// net.flow_realloc_per_class (a stated reduction): the wait after a full allocation is at least
// so much per class it filled. A (0->1, 4 MiB), X (2->3) and Y (4->5) form at t = 0: the full
// allocation fills 3 classes, so the next waits max(10 us, 3 x 4 us) = 12 us. B (6->1, 256 KiB)
// forms at 1 us into GPU 1's full ingress and waits at rate 0 until 12 us (not 10 us), then
// shares it with A: 294912 wire bytes at 100 GB/s end at 14949.12 ns. That full allocation
// filled only A and B's component (2 classes): the next waits max(10 us, 8 us), so A keeps its
// half until 22 us: 2400000 wire bytes by 12 us, 1000000 by 22 us, the last 1318592 at 200 GB/s
// (6592.96 ns). Each then adds the last packet's plane link (2880 ps) and 250 + 100 + 250 ns.
TEST(FlowReallocInterval, TheWaitAfterAFullAllocationGrowsWithTheClassesItFilled) {
  Simulator sim;
  NetConfig c = interval_config(7);
  c.flow_realloc_per_class = Time::from_ns(4000);
  FlowNetwork net(c, sim);
  const double link = 200e9 * 128 / 144;
  Time a_done, b_done;
  std::vector<double> at_11us, at_13us;
  net.transfer(0, 1, 4 << 20, 0, [&] { a_done = sim.now(); });
  net.transfer(2, 3, 4 << 20, 0, [] {});
  net.transfer(4, 5, 4 << 20, 0, [] {});
  sim.schedule_at(Time::from_ns(1000), [&] { net.transfer(6, 1, 256 << 10, 0, [&] { b_done = sim.now(); }); });
  sim.schedule_at(Time::from_ns(11000), [&] { at_11us = net.rates(); });
  sim.schedule_at(Time::from_ns(13000), [&] { at_13us = net.rates(); });
  sim.run();
  ASSERT_EQ(at_11us.size(), 4u);  // A, X, Y, B in start order
  EXPECT_NEAR(at_11us[0] / link, 1.0, 1e-12);
  EXPECT_EQ(at_11us[3], 0.0);
  ASSERT_EQ(at_13us.size(), 4u);
  EXPECT_NEAR(at_13us[0] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(at_13us[3] / (link / 2), 1.0, 1e-12);
  EXPECT_NEAR(static_cast<double>(b_done.ps()), 14949120 + 602880, 1);
  EXPECT_NEAR(static_cast<double>(a_done.ps()), 28592960 + 602880, 1);
}

TEST(FlowReallocInterval, PerClassWaitNeedsAnInterval) {
  NetConfig c = interval_config(2);
  c.flow_realloc_interval = Time::zero();
  c.flow_realloc_per_class = Time::from_ps(10);
  try {
    c.validate();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.flow_realloc_per_class");
  }
}

}  // namespace
}  // namespace moehub
