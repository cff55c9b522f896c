// Processor sharing of the GPU's memory bandwidth.

#include "gpu/shared_bandwidth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace moehub::gpu {
namespace {

// 1e9 B/s: one byte per nanosecond, so shares are easy to follow by hand.
constexpr uint64_t kRate = 1000000000;

// A fixed pseudo-random sequence for the property tests (xorshift64).
struct XorShift {
  uint64_t x;
  explicit XorShift(uint64_t seed) : x(seed * 0x9E3779B97F4A7C15ULL) {}
  uint64_t operator()() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
};

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

TEST(SharedBandwidth, UnwatchedTrafficTakesItsShareWithoutAnEvent) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  Time a;
  mem.request(1000, [&] { a = sim.now(); });
  mem.consume(200);  // shares equally: 200 B each by 400 ns, then A alone for its last 800 B
  const uint64_t events = sim.run();
  EXPECT_EQ(a.ps(), 1200000);
  EXPECT_EQ(events, 1u);  // A's departure only
  EXPECT_EQ(mem.bytes_served(), 1200u);
  EXPECT_EQ(mem.busy_time().ps(), 1200000);
}

TEST(SharedBandwidth, UnwatchedAloneIsBusyUntilItDeparts) {
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  mem.consume(300);
  mem.consume(100);  // 100 B each by 200 ns; the first alone for 200 more
  sim.schedule_at(Time::from_ns(150), [&] { EXPECT_EQ(mem.busy_time().ps(), 150000); });
  sim.schedule_at(Time::from_ns(1000), [] {});
  sim.run();
  EXPECT_EQ(mem.busy_time().ps(), 400000);
}

// The lazy departures land where a request with a callback that does nothing would: random
// mixes of watched and unwatched traffic give the same completion times either way.
TEST(SharedBandwidth, UnwatchedDeparturesMatchEventDrivenOnes) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::vector<int64_t> times[2];
    int64_t busy[2] = {0, 0};
    for (int lazy = 0; lazy < 2; ++lazy) {
      Simulator sim;
      SharedBandwidth mem(sim, Bandwidth::bytes_per_second(3350000000000ULL));
      XorShift next{seed};
      for (int i = 0; i < 300; ++i) {
        const Time at = Time::from_ps(static_cast<int64_t>(next() % 200000));
        const bool watched = next() % 4 == 0;
        const uint64_t bytes = watched ? 1 + next() % 65536 : 128;
        sim.schedule_at(at, [&, watched, bytes, lazy] {
          if (watched) {
            mem.request(bytes, [&] { times[lazy].push_back(sim.now().ps()); });
          } else if (lazy) {
            mem.consume(bytes);
          } else {
            mem.request(bytes, [] {});
          }
        });
      }
      sim.run();
      busy[lazy] = mem.busy_time().ps();
    }
    EXPECT_EQ(times[0], times[1]) << "seed " << seed;
    EXPECT_EQ(busy[0], busy[1]) << "seed " << seed;
  }
}

TEST(SharedBandwidth, TrackedRequestIsServedWithoutAnEventAndMayBeWatchedLater) {
  // A 1000 B request and a tracked 32 B one arrive together at 1 B/ns: each gets 0.5 B/ns, so
  // the 32 B are served at 64 ns and the 1000 B at 1032 ns (all bytes at 1 B/ns).
  Simulator sim;
  SharedBandwidth mem(sim, Bandwidth::bytes_per_second(kRate));
  Time big, small;
  mem.request(1000, [&] { big = sim.now(); });
  const SharedBandwidth::Ticket t = mem.consume_tracked(32);
  std::vector<bool> seen;
  sim.schedule_at(Time::from_ns(40), [&] {
    seen.push_back(mem.served_by_now(t));
    mem.watch(t, [&] { small = sim.now(); });
  });
  sim.schedule_at(Time::from_ps(63999), [&] { seen.push_back(mem.served_by_now(t)); });
  sim.schedule_at(Time::from_ns(64), [&] { seen.push_back(mem.served_by_now(t)); });
  sim.run();
  EXPECT_EQ(seen, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(small.ps(), 64000);
  EXPECT_EQ(big.ps(), 1032000);
  EXPECT_EQ(mem.stats()["requests"].get<uint64_t>(), 2u);
}

// A poll's load as Gpu issues it: served after max(latency, its bytes). Tracked and checked
// at the latency, or requested with an event and joined with a timer: the same instants, for
// the loads and for the watched requests around them.
TEST(SharedBandwidth, TrackedLoadsMatchRequestedOnes) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::vector<int64_t> times[2];
    for (int tracked = 0; tracked < 2; ++tracked) {
      Simulator sim;
      SharedBandwidth mem(sim, Bandwidth::bytes_per_second(3350000000000ULL));
      XorShift next{seed};
      std::vector<SharedBandwidth::Ticket> tickets(300);
      std::vector<int> joins(300, 2);
      for (size_t i = 0; i < 300; ++i) {
        const Time at = Time::from_ps(static_cast<int64_t>(next() % 200000));
        const bool load = next() % 2 == 0;
        const uint64_t bytes = load ? 32 : 1 + next() % 65536;
        const Time latency = Time::from_ps(static_cast<int64_t>(next() % 40));
        auto record = [&, i] { times[tracked].push_back(static_cast<int64_t>(i) * 1000000000 + sim.now().ps()); };
        sim.schedule_at(at, [&, i, load, bytes, latency, tracked, record] {
          if (!load) {
            mem.request(bytes, record);
          } else if (tracked) {
            tickets[i] = mem.consume_tracked(bytes);
            sim.schedule_in(latency, [&, i, record] {
              if (mem.served_by_now(tickets[i])) {
                record();
              } else {
                mem.watch(tickets[i], record);
              }
            });
          } else {
            auto join = [&, i, record] {
              if (--joins[i] == 0) record();
            };
            mem.request(bytes, join);
            sim.schedule_in(latency, join);
          }
        });
      }
      sim.run();
      std::sort(times[tracked].begin(), times[tracked].end());
    }
    EXPECT_EQ(times[0], times[1]) << "seed " << seed;
  }
}

}  // namespace
}  // namespace moehub::gpu
