#include <gtest/gtest.h>

#include "platform/activity.h"

namespace moehub {
namespace {

Time us(int64_t v) { return Time::from_us(v); }

TEST(ActivityLog, PartsSumToTheWindowAndGapsAreLaunches) {
  ActivityLog log;
  log.add(Activity::Routing, us(0), us(10));
  log.add(Activity::ExpertCompute, us(15), us(40));
  const auto parts = log.breakdown(us(0), us(50));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::Routing)], us(10));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::ExpertCompute)], us(25));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::Launch)], us(15));  // 10-15 and 40-50
  Time sum;
  for (Time t : parts) sum += t;
  EXPECT_EQ(sum, us(50));
}

TEST(ActivityLog, OverlappedCommunicationIsNotExposed) {
  ActivityLog log;
  log.add(Activity::Communication, us(0), us(30));
  log.add(Activity::ExpertCompute, us(10), us(20));
  log.add(Activity::Synchronisation, us(25), us(35));
  const auto parts = log.breakdown(us(0), us(35));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::ExpertCompute)], us(10));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::Communication)], us(20));    // 0-10 and 20-30
  EXPECT_EQ(parts[static_cast<size_t>(Activity::Synchronisation)], us(5));  // 30-35 only
}

TEST(ActivityLog, WindowClipsIntervals) {
  ActivityLog log;
  log.add(Activity::Polling, us(0), us(100));
  const auto parts = log.breakdown(us(40), us(60));
  EXPECT_EQ(parts[static_cast<size_t>(Activity::Polling)], us(20));
  EXPECT_THROW(log.add(Activity::Polling, us(5), us(4)), std::logic_error);
}

TEST(ActivityLog, JsonNamesEveryCategory) {
  const auto j = breakdown_json(ActivityLog().breakdown(us(0), us(1)));
  for (const char* k : {"routing", "expert_compute", "scaling", "exposed_communication", "synchronisation", "launches",
                        "data_shuffles", "polling"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(j["launches"].get<double>(), 1.0);
}

}  // namespace
}  // namespace moehub
