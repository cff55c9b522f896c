#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "sim/callback.h"

namespace moehub {
namespace {

TEST(UniqueFunction, HoldsMoveOnlyCallables) {
  auto p = std::make_unique<int>(41);
  UniqueFunction<int()> f = [p = std::move(p)] { return *p + 1; };
  UniqueFunction<int()> g = std::move(f);
  EXPECT_FALSE(static_cast<bool>(f));
  EXPECT_EQ(g(), 42);
}

TEST(UniqueFunction, LargeCallablesGoToTheHeapAndAreDestroyed) {
  auto alive = std::make_shared<int>(0);
  {
    std::array<int64_t, 32> big{};
    big[31] = 5;
    UniqueFunction<int64_t(int64_t)> f = [big, alive](int64_t x) { return big[31] + x; };
    EXPECT_EQ(alive.use_count(), 2);
    EXPECT_EQ(f(1), 6);
    UniqueFunction<int64_t(int64_t)> g;
    g = std::move(f);
    EXPECT_EQ(g(2), 7);
  }
  EXPECT_EQ(alive.use_count(), 1);
}

}  // namespace
TEST(RunWaiters, RunsEachOnceAndKeepsThoseThatWaitAgain) {
  std::vector<Callback> waiters, scratch;
  int runs = 0;
  waiters.push_back([&] { ++runs; });
  // The second waiter queues a third while the list runs: it waits for the next call.
  waiters.push_back([&] {
    ++runs;
    waiters.push_back([&] { runs += 10; });
  });
  run_waiters(waiters, scratch);
  EXPECT_EQ(runs, 2);
  ASSERT_EQ(waiters.size(), 1u);
  EXPECT_TRUE(scratch.empty());
  run_waiters(waiters, scratch);
  EXPECT_EQ(runs, 12);
  EXPECT_TRUE(waiters.empty());
}

}  // namespace moehub
