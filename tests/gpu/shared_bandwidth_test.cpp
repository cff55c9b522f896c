// Processor sharing of the GPU's memory bandwidth.

#include "gpu/shared_bandwidth.h"

#include <gtest/gtest.h>

#include <vector>

namespace moehub::gpu {
namespace {

// 1e9 B/s: one byte per nanosecond, so shares are easy to follow by hand.
constexpr uint64_t kRate = 1000000000;

TEST(SharedBandwidth, LoneRequestTakesItsTransferTime) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(3));
  Time done;
  mem.request(10, [&] { done = sim.now(); });
  sim.run();
  // ceil(10e12 / 3) = 3333333333334 ps, the same ceiling as Bandwidth::transfer_time.
  EXPECT_EQ(done.ps(), 3333333333334);
  EXPECT_EQ(done, Bandwidth::bytes_per_second(3).transfer_time(10));
}

TEST(SharedBandwidth, ConcurrentRequestsShareEqually) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  Time a, b;
  mem.request(1000, [&] { a = sim.now(); });
  mem.request(1000, [&] { b = sim.now(); });
  sim.run();
  EXPECT_EQ(a.ps(), 2000000);  // 2000 B at 1 B/ns in total
  EXPECT_EQ(b.ps(), 2000000);
}

TEST(SharedBandwidth, LateArrivalSlowsTheFirstRequest) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  Time a, b;
  mem.request(1000, [&] { a = sim.now(); });
  sim.schedule_at(Time::from_ns(500), [&] { mem.request(1000, [&] { b = sim.now(); }); });
  sim.run();
  // A: 500 B alone by 500 ns, its other 500 B at half rate -> 1500 ns.
  // B: 500 B at half rate by 1500 ns, its other 500 B alone -> 2000 ns.
  EXPECT_EQ(a.ps(), 1500000);
  EXPECT_EQ(b.ps(), 2000000);
  EXPECT_EQ(mem.bytes_served(), 2000u);
  EXPECT_EQ(mem.busy_time().ps(), 2000000);
}

TEST(SharedBandwidth, SmallRequestOvertakesLargeOne) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  std::vector<int> order;
  mem.request(10000, [&] { order.push_back(1); });
  mem.request(32, [&] { order.push_back(2); });
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
  EXPECT_EQ(sim.now().ps(), 10032000);  // work conserving: all bytes at full rate
}

TEST(SharedBandwidth, ZeroBytesCompleteAtOnceButNotReentrantly) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  bool done = false;
  mem.request(0, [&] { done = true; });
  EXPECT_FALSE(done);
  sim.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(sim.now(), Time::zero());
}

TEST(SharedBandwidth, CallbackMayIssueTheNextRequest) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  int left = 3;
  Time end;
  std::function<void()> again = [&] {
    if (--left > 0) {
      mem.request(100, [&] { again(); });
    } else {
      end = sim.now();
    }
  };
  mem.request(100, [&] { again(); });
  sim.run();
  EXPECT_EQ(end.ps(), 300000);
}

}  // namespace
}  // namespace moehub::gpu
