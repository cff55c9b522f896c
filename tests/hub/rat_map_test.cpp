#include "hub/rat_map.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "hub/row_allocation_table.h"

namespace moehub {
namespace {

// Every key of one residue mod 16 shares a home slot: long probe runs that wrap around.
struct ModHash {
  size_t operator()(uint64_t k) const { return static_cast<size_t>(k % 16); }
};
using ModMap = RatMap<uint64_t, uint64_t, ModHash>;

TEST(RatMap, FindsWhatWasInsertedAndNothingElse) {
  ModMap m;
  EXPECT_EQ(m.find(3), nullptr);
  m.insert(3, 30);
  m.insert(19, 190);  // home 3 too: probes to slot 4
  ASSERT_NE(m.find(3), nullptr);
  EXPECT_EQ(*m.find(3), 30u);
  EXPECT_EQ(*m.find(19), 190u);
  EXPECT_EQ(m.find(35), nullptr);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_THROW(m.insert(19, 1), std::logic_error);
}

TEST(RatMap, EraseShiftsTheRunBackSoLaterKeysStayReachable) {
  ModMap m;
  m.insert(15, 1);  // home 15
  m.insert(31, 2);  // home 15 -> slot 0 (wraps)
  m.insert(0, 3);   // home 0 -> slot 1
  m.insert(47, 4);  // home 15 -> slot 2
  EXPECT_TRUE(m.erase(15));
  EXPECT_FALSE(m.erase(15));
  EXPECT_EQ(m.find(15), nullptr);
  EXPECT_EQ(*m.find(31), 2u);
  EXPECT_EQ(*m.find(0), 3u);
  EXPECT_EQ(*m.find(47), 4u);
  EXPECT_TRUE(m.erase(0));
  EXPECT_EQ(*m.find(31), 2u);
  EXPECT_EQ(*m.find(47), 4u);
  EXPECT_EQ(m.size(), 2u);
}

TEST(RatMap, GrowsAtHalfFullAndKeepsEveryKey) {
  ModMap m;
  for (uint64_t k = 0; k < 8; ++k) m.insert(k * 16, k);  // all home 0
  EXPECT_EQ(m.capacity(), 16u);
  m.insert(8 * 16, 8);  // the ninth: 9 > 16 / 2
  EXPECT_EQ(m.capacity(), 32u);
  for (uint64_t k = 0; k < 9; ++k) EXPECT_EQ(*m.find(k * 16), k);
  for (uint64_t k = 0; k < 9; k += 2) EXPECT_TRUE(m.erase(k * 16));
  for (uint64_t k = 1; k < 9; k += 2) EXPECT_EQ(*m.find(k * 16), k);
  EXPECT_EQ(m.size(), 4u);
}

// The table the map serves: FIFO eviction at capacity, by the oldest live mapping.
TEST(RatMap, RowAllocationTableEvictsTheOldest) {
  RowAllocationTable rat(2, 1, 1);
  EXPECT_FALSE(rat.insert(RatKey{1, 10}, 100).has_value());
  EXPECT_FALSE(rat.insert(RatKey{1, 11}, 101).has_value());
  const auto ev = rat.insert(RatKey{2, 10}, 102);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->key, (RatKey{1, 10}));
  EXPECT_EQ(ev->local_row_id, 100u);
  EXPECT_FALSE(rat.lookup(RatKey{1, 10}).has_value());
  EXPECT_EQ(*rat.lookup(RatKey{2, 10}), 102u);
  rat.flush_region(1);
  EXPECT_FALSE(rat.lookup(RatKey{1, 11}).has_value());
  EXPECT_EQ(rat.size(), 1u);
}

}  // namespace
}  // namespace moehub
