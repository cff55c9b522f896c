#include <gtest/gtest.h>

#include <vector>

#include "sim/event_queue.h"

namespace moehub {
namespace {

std::vector<int> drain(EventQueue& q) {
  std::vector<int> order;
  while (!q.empty()) {
    Time at;
    q.pop(at)();
  }
  return order;
}

TEST(EventQueue, OrdersByTimeThenPriorityThenInsertion) {
  EventQueue q;
  std::vector<int> seen;
  q.push(Time::from_ns(5), 0, [&] { seen.push_back(1); });
  q.push(Time::from_ns(1), 0, [&] { seen.push_back(2); });
  q.push(Time::from_ns(5), -1, [&] { seen.push_back(3); });  // same time, runs first by priority
  q.push(Time::from_ns(5), 0, [&] { seen.push_back(4); });   // same time and priority: after 1
  q.push(Time::from_ns(3), 7, [&] { seen.push_back(5); });
  drain(q);
  EXPECT_EQ(seen, (std::vector<int>{2, 5, 3, 1, 4}));
}

TEST(EventQueue, CancelledEventsNeverRun) {
  EventQueue q;
  std::vector<int> seen;
  auto a = q.push(Time::from_ns(1), 0, [&] { seen.push_back(1); });
  auto b = q.push(Time::from_ns(2), 0, [&] { seen.push_back(2); });
  q.push(Time::from_ns(3), 0, [&] { seen.push_back(3); });
  EXPECT_TRUE(q.pending(a));
  EXPECT_TRUE(q.cancel(b));
  EXPECT_FALSE(q.cancel(b));  // second cancel is a no-op
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.next_time(), Time::from_ns(1));
  drain(q);
  EXPECT_EQ(seen, (std::vector<int>{1, 3}));
  EXPECT_FALSE(q.pending(a));  // fired
  EXPECT_FALSE(q.cancel(a));
}

TEST(EventQueue, StaleHandleDoesNotCancelARecycledSlot) {
  EventQueue q;
  int runs = 0;
  auto a = q.push(Time::from_ns(1), 0, [&] { ++runs; });
  Time at;
  q.pop(at)();
  q.push(Time::from_ns(2), 0, [&] { ++runs; });  // reuses a's slot
  EXPECT_FALSE(q.cancel(a));
  q.pop(at)();
  EXPECT_EQ(runs, 2);
}

TEST(EventQueue, CancelledTopIsSkipped) {
  EventQueue q;
  int ran = 0;
  auto a = q.push(Time::from_ns(1), 0, [&] { ran = 1; });
  q.push(Time::from_ns(9), 0, [&] { ran = 9; });
  q.cancel(a);
  EXPECT_EQ(q.next_time(), Time::from_ns(9));
  Time at;
  q.pop(at)();
  EXPECT_EQ(at, Time::from_ns(9));
  EXPECT_EQ(ran, 9);
  EXPECT_TRUE(q.empty());
}

// Four events in one 64 ps calendar bucket (10, 20, 30, 40 ps): cancelling the middle one, the
// tail and then the head unlinks each from the bucket's list; what remains still runs in order,
// and events added to the same bucket afterwards land in place.
TEST(EventQueue, CancelInsideOneCalendarBucketKeepsItsOrder) {
  EventQueue q;
  std::vector<int> seen;
  const auto at = [](int64_t ps) { return Time::from_ps(ps); };
  auto a = q.push(at(10), 0, [&] { seen.push_back(10); });
  auto b = q.push(at(20), 0, [&] { seen.push_back(20); });
  q.push(at(30), 0, [&] { seen.push_back(30); });
  auto d = q.push(at(40), 0, [&] { seen.push_back(40); });
  EXPECT_TRUE(q.cancel(b));
  EXPECT_TRUE(q.cancel(d));
  EXPECT_TRUE(q.cancel(a));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.next_time(), at(30));
  q.push(at(35), 0, [&] { seen.push_back(35); });  // after the new tail
  q.push(at(5), 0, [&] { seen.push_back(5); });    // before the new head
  drain(q);
  EXPECT_EQ(seen, (std::vector<int>{5, 30, 35}));
}

// Twenty events in one bucket: those deeper than the unlink walk stay in place, cancelled, and
// are dropped when they reach the front.
TEST(EventQueue, CancelDeepInALongBucketIsLazyButExact) {
  EventQueue q;
  std::vector<int> seen;
  std::vector<EventHandle> h;
  for (int i = 0; i < 20; ++i) h.push_back(q.push(Time::from_ps(i), 0, [&seen, i] { seen.push_back(i); }));
  for (int i = 1; i < 20; i += 2) EXPECT_TRUE(q.cancel(h[static_cast<size_t>(i)]));
  EXPECT_EQ(q.size(), 10u);
  drain(q);
  EXPECT_EQ(seen, (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
}

TEST(EventQueue, ManyRandomEventsComeOutSorted) {
  EventQueue q;
  uint64_t x = 12345;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    q.push(Time::from_ps(static_cast<int64_t>(x >> 44)), 0, [] {});
  }
  Time last = Time::zero();
  while (!q.empty()) {
    Time at;
    q.pop(at);
    EXPECT_LE(last, at);
    last = at;
  }
}

}  // namespace
}  // namespace moehub
