#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "sim/simulator.h"

namespace moehub {
namespace {

struct Counter {
  std::vector<std::pair<int64_t, int>> log;
  Simulator* sim = nullptr;
  void hit(int tag) { log.emplace_back(sim->now().ps(), tag); }
};

TEST(Simulator, AdvancesTheClockToEachEvent) {
  Simulator sim;
  Counter c;
  c.sim = &sim;
  sim.schedule_in(Time::from_ns(10), &Counter::hit, &c, 1);
  sim.schedule_at(Time::from_ns(4), [&] {
    c.hit(2);
    sim.schedule_in(Time::from_ns(1), [&] { c.hit(3); });
  });
  EXPECT_EQ(sim.run(), 3u);
  EXPECT_EQ(c.log, (std::vector<std::pair<int64_t, int>>{{4000, 2}, {5000, 3}, {10000, 1}}));
  EXPECT_EQ(sim.now(), Time::from_ns(10));
  EXPECT_EQ(sim.events_executed(), 3u);
}

TEST(Simulator, RunUntilStopsAtTheLimit) {
  Simulator sim;
  int runs = 0;
  sim.schedule_at(Time::from_ns(1), [&] { ++runs; });
  sim.schedule_at(Time::from_ns(5), [&] { ++runs; });
  sim.schedule_at(Time::from_ns(6), [&] { ++runs; });
  EXPECT_EQ(sim.run_until(Time::from_ns(5)), 2u);  // events at the limit run
  EXPECT_EQ(sim.now(), Time::from_ns(5));
  EXPECT_EQ(sim.events_pending(), 1u);
  sim.run();
  EXPECT_EQ(runs, 3);
}

TEST(Simulator, RunUntilThatRunsDryKeepsTheLastEventsTime) {
  Simulator sim;
  sim.schedule_at(Time::from_ns(3), [] {});
  EXPECT_EQ(sim.run_until(Time::from_us(1)), 1u);
  EXPECT_EQ(sim.now(), Time::from_ns(3));
}

TEST(Simulator, StopEndsTheRun) {
  Simulator sim;
  int runs = 0;
  sim.schedule_at(Time::from_ns(1), [&] { ++runs; sim.stop(); });
  sim.schedule_at(Time::from_ns(2), [&] { ++runs; });
  sim.run();
  EXPECT_EQ(runs, 1);
  sim.run();
  EXPECT_EQ(runs, 2);
}

TEST(Simulator, SchedulingInThePastIsAProgrammingError) {
  Simulator sim;
  sim.schedule_at(Time::from_ns(5), [&] { EXPECT_THROW(sim.schedule_at(Time::from_ns(4), [] {}), std::logic_error); });
  sim.run();
}

TEST(Simulator, CancelPreventsTheEvent) {
  Simulator sim;
  bool ran = false;
  auto h = sim.schedule_in(Time::from_ns(3), [&] { ran = true; });
  EXPECT_TRUE(sim.pending(h));
  EXPECT_TRUE(sim.cancel(h));
  sim.run();
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace moehub
