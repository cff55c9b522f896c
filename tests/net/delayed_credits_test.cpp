#include "net/delayed_credits.h"

#include <gtest/gtest.h>

namespace moehub {
namespace {

Time ps(int64_t v) { return Time::from_ps(v); }

TEST(DelayedCredits, ReturnsBecomeUsableAtTheirTime) {
  DelayedCredits c;
  c.init(100, 10);
  c.take(0, 9);
  c.take(1, 1);
  EXPECT_EQ(c.available(0, ps(0)), 91u);
  EXPECT_EQ(c.in_use(0) + c.in_use(1), 10u);
  c.give_at(ps(500), 0, 9);
  c.give_at(ps(700), 1, 1);
  EXPECT_EQ(c.next_return(), ps(500));
  EXPECT_EQ(c.available(0, ps(499)), 91u);
  EXPECT_EQ(c.available(0, ps(500)), 100u);
  EXPECT_EQ(c.available(1, ps(500)), 9u);
  EXPECT_EQ(c.next_return(), ps(700));
  EXPECT_EQ(c.available(1, ps(700)), 10u);
  EXPECT_EQ(c.next_return(), Time::max());
}

// A switch input's credits come back from several outputs: a 9-flit packet sent at 0 on one
// output frees its slot at 0 + 9 x 320 ps, a 1-flit ack sent at 1000 ps on another at 1320 ps.
// The ack's credit must not wait behind the longer packet's.
TEST(DelayedCredits, AShortPacketsReturnOvertakesALongOnesOfTheSameClass) {
  DelayedCredits c;
  c.init(20, 20);
  c.take(0, 9);
  c.take(0, 1);
  c.give_at(ps(2880 + 250000), 0, 9);
  c.give_at(ps(1320 + 250000), 0, 1);
  EXPECT_EQ(c.next_return(), ps(251320));
  EXPECT_EQ(c.available(0, ps(251320)), 11u);
  EXPECT_EQ(c.next_return(), ps(252880));
  EXPECT_EQ(c.available(0, ps(252880)), 20u);
}

TEST(DelayedCredits, ClassesReturnIndependently) {
  DelayedCredits c;
  c.init(4, 4);
  c.take(0, 4);
  c.take(1, 4);
  c.give_at(ps(900), 0, 4);
  c.give_at(ps(100), 1, 4);
  EXPECT_EQ(c.next_return(), ps(100));
  EXPECT_EQ(c.available(1, ps(100)), 4u);
  EXPECT_EQ(c.available(0, ps(100)), 0u);
  EXPECT_EQ(c.available(0, ps(900)), 4u);
}

// A sender short of credits asks when it can send: the return that brings its class up to
// what it needs, counting returns pushed out of order, and never one of the other class.
TEST(DelayedCredits, TimeAvailableIsWhenTheClassCoversTheNeed) {
  DelayedCredits c;
  c.init(12, 4);
  c.take(0, 10);  // 2 flits left
  c.take(1, 4);
  EXPECT_EQ(c.time_available(0, 2), Time::zero());  // already there
  c.give_at(ps(300), 1, 4);                         // the other class: no help
  c.give_at(ps(900), 0, 4);
  c.give_at(ps(500), 0, 3);  // out of order: sorts before 900
  EXPECT_EQ(c.time_available(0, 5), ps(500));   // 2 + 3
  EXPECT_EQ(c.time_available(0, 9), ps(900));   // 2 + 3 + 4
  EXPECT_EQ(c.time_available(0, 10), Time::max());  // the returns never suffice
  EXPECT_EQ(c.time_available(1, 1), ps(300));
  EXPECT_EQ(c.available(0, ps(500)), 5u);
  EXPECT_EQ(c.time_available(0, 9), ps(900));  // after absorbing, the rest still counts
}

// Many returns out of order force the ring to grow while it keeps them sorted.
TEST(DelayedCredits, ManyOutOfOrderReturnsStaySorted) {
  DelayedCredits c;
  c.init(1000, 0);
  c.take(0, 1000);
  for (int i = 0; i < 100; ++i) c.give_at(ps(1000 - 10 * i), 0, 10);  // 1000, 990, ..., 10
  for (int i = 1; i <= 100; ++i) {
    EXPECT_EQ(c.next_return(), ps(10 * i));
    EXPECT_EQ(c.available(0, ps(10 * i)), static_cast<uint32_t>(10 * i));
  }
}

// Returns pushed in descending order while earlier ones drain: the ring's front moves on, so
// later rounds wrap around its end and insert across the wrap. Each round gives 40 returns of
// one flit at T+10, T+20, ..., T+400; half are due at T+200, the rest at T+400.
TEST(DelayedCredits, OutOfOrderReturnsAcrossTheRingsWrap) {
  DelayedCredits c;
  c.init(1000, 0);
  c.take(0, 1000);
  for (int r = 0; r < 10; ++r) {
    const int64_t t = 1000 * r;
    for (int j = 0; j < 40; ++j) c.give_at(ps(t + 400 - 10 * j), 0, 1);
    EXPECT_EQ(c.next_return(), ps(t + 10));
    EXPECT_EQ(c.available(0, ps(t + 200)), static_cast<uint32_t>(40 * r + 20));
    EXPECT_EQ(c.next_return(), ps(t + 210));
    EXPECT_EQ(c.available(0, ps(t + 400)), static_cast<uint32_t>(40 * r + 40));
  }
  EXPECT_EQ(c.next_return(), Time::max());
}

// Returns pack their time in 47 bits: a run that long is refused with the field to change.
TEST(DelayedCredits, AReturnBeyondThePackedTimeRangeIsAUserError) {
  DelayedCredits c;
  c.init(10, 10);
  c.give_at(ps((INT64_C(1) << 47) - 1), 0, 1);
  EXPECT_THROW(c.give_at(ps(INT64_C(1) << 47), 0, 1), UserError);
}

}  // namespace
}  // namespace moehub
