#include "sim/counters.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gpu/gpu_counters.h"
#include "hub/hub_counters.h"

namespace moehub {
namespace {

struct Two {
  uint64_t a = 0;
  uint64_t b = 0;
};

const CounterTable<Two> kTwo{{"a_key", "B", "first", &Two::a}, {"b_key", "packets", "second", &Two::b}};

TEST(CounterTable, AddsMemberByMemberAndWritesEachUnderItsKey) {
  Two total{1, 2};
  kTwo.add(total, Two{10, 20});
  kTwo.add(total, Two{100, 200});
  EXPECT_EQ(total.a, 111u);
  EXPECT_EQ(total.b, 222u);
  EXPECT_EQ(kTwo.to_json(total).dump(), R"({"a_key":111,"b_key":222})");
}

// Every registered counter has a key of its own, a unit and a description, and the table
// covers each member once (adding ones to a zero struct sets every member to one).
template <class S>
void expect_complete(const CounterTable<S>& t, size_t members) {
  std::set<std::string> keys;
  S ones;
  for (const auto& c : t.counters()) {
    EXPECT_TRUE(keys.insert(c.key).second) << c.key;
    EXPECT_NE(std::string(c.unit), "") << c.key;
    EXPECT_NE(std::string(c.what), "") << c.key;
    ones.*c.member = 1;
  }
  EXPECT_EQ(t.counters().size(), members);
  S sum;
  t.add(sum, ones);
  t.add(sum, ones);
  for (const auto& c : t.counters()) EXPECT_EQ(sum.*c.member, 2u) << c.key;
}

TEST(CounterTable, EveryHubAndGpuCounterIsRegisteredOnceWithAUnit) {
  expect_complete(AauCounters::table(), sizeof(AauCounters) / sizeof(uint64_t));
  expect_complete(RpmCounters::table(), sizeof(RpmCounters) / sizeof(uint64_t));
  expect_complete(DamCounters::table(), sizeof(DamCounters) / sizeof(uint64_t));
  expect_complete(gpu::GpuCounters::table(), sizeof(gpu::GpuCounters) / sizeof(uint64_t));
}

}  // namespace
}  // namespace moehub
