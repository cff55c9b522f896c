#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "hub/data_availability_manager.h"
#include "sim/error.h"

namespace moehub {
namespace {

DamConfig small_dam(uint32_t entries = 16) {
  DamConfig c;
  c.clock = Frequency::hertz(1000000000);  // 1 cycle = 1000 ps
  c.table_entries = entries;
  c.counter_bits = 24;
  c.global_counter_bits = 40;
  c.lookup_cycles = 2;
  return c;
}

class DamTest : public ::testing::Test {
 protected:
  DamTest() : dam(sim, small_dam(), [this](const DamSignal& s) { seen.push_back(s); }) {}
  void ack_at(Time t, uint64_t address, uint64_t bytes) {
    sim.schedule_at(t, [this, address, bytes] { dam.on_write_ack(address, bytes); });
  }
  // Rows of 256 B at 0x10000, M-tile 4 rows, 14 rows allocated -> tiles of 4, 4, 4, 2 rows.
  static constexpr uint64_t kBase = 0x10000, kRow = 256;
  ConsumerTiling tiling() const { return ConsumerTiling{kBase, kRow, kRow, 4, 14, 10}; }
  uint64_t row(uint64_t r) const { return kBase + r * kRow; }

  Simulator sim;
  std::vector<DamSignal> seen;
  DataAvailabilityManager dam;
};

TEST_F(DamTest, TilingBuildsOneEntryPerMTile) {
  EXPECT_EQ(dam.add_tiling(tiling()), 4u);
  const auto& e = dam.table().entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].begin, kBase);
  EXPECT_EQ(e[0].end, kBase + 4 * kRow);
  EXPECT_EQ(e[0].group, 10u);
  EXPECT_EQ(e[0].threshold_bytes, 4 * kRow);
  EXPECT_EQ(e[3].begin, kBase + 12 * kRow);
  EXPECT_EQ(e[3].end, kBase + 14 * kRow);  // the partial last tile covers only its 2 rows
  EXPECT_EQ(e[3].group, 13u);
}

TEST_F(DamTest, ReleasesExactlyAtTheThreshold) {
  dam.add_tiling(tiling());
  // Group 10 needs 1024 B. Seven 128 B acks, one per ns, leave it 128 B short.
  for (int i = 0; i < 7; ++i) ack_at(Time::from_ns(i), row(0) + 128 * i, 128);
  sim.run();
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(dam.counter(10), 896u);
  ack_at(Time::from_ns(20), row(3) + 128, 128);  // the last 128 B of the tile
  sim.run();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].group, 10u);
  EXPECT_EQ(seen[0].kind, DamSignalKind::Ready);
  EXPECT_EQ(seen[0].at.ps(), 22000);  // ack at 20 ns + 2 lookup cycles
  EXPECT_EQ(seen[0].counted_bytes, 1024u);
  // More data for a released group signals nothing again.
  ack_at(Time::from_ns(30), row(0), 128);
  sim.run();
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(dam.counters().releases, 1u);
}

TEST_F(DamTest, AllReadyReleasesThePartialTileAndRetiresEmptyGroups) {
  dam.add_tiling(tiling());
  EXPECT_FALSE(dam.every_group_signalled_once());  // the end-of-run check sees four unsignalled groups
  // 9 rows arrive (rows 0-8): tiles 10 and 11 fill, tile 12 holds 1 of 4 rows, tile 13 none.
  dam.set_expected_total(9 * kRow);
  for (uint64_t r = 0; r < 9; ++r) {
    ack_at(Time::from_ns(10 * static_cast<int64_t>(r)), row(r), 128);
    ack_at(Time::from_ns(10 * static_cast<int64_t>(r) + 5), row(r) + 128, 128);
  }
  sim.run();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].group, 10u);
  EXPECT_EQ(seen[0].at.ps(), 37000);  // row 3's second half: 35 ns + 2
  EXPECT_EQ(seen[1].group, 11u);
  EXPECT_EQ(seen[1].at.ps(), 77000);
  EXPECT_EQ(seen[2].group, 12u);
  EXPECT_EQ(seen[2].kind, DamSignalKind::PartialReady);
  EXPECT_EQ(seen[2].at.ps(), 87000);  // the last ack (85 ns) completes the global count
  EXPECT_EQ(seen[2].counted_bytes, kRow);
  EXPECT_EQ(seen[3].group, 13u);
  EXPECT_EQ(seen[3].kind, DamSignalKind::Retired);
  EXPECT_EQ(seen[3].at.ps(), 87000);
  EXPECT_EQ(dam.all_ready_time(), Time::from_ns(87));
  const DamCounters st = dam.counters();
  EXPECT_EQ(st.releases, 2u);
  EXPECT_EQ(st.partial_releases, 1u);
  EXPECT_EQ(st.retired_groups, 1u);
  EXPECT_TRUE(dam.every_group_signalled_once());  // 2 ready + 1 partly ready + 1 retired = 4 groups
}

TEST_F(DamTest, ExpectedTotalReachedBeforeItIsKnownFiresWhenSet) {
  dam.add_tiling(tiling());
  ack_at(Time::zero(), row(0), 256);
  sim.schedule_at(Time::from_ns(50), [&] { dam.set_expected_total(256); });
  sim.run();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].kind, DamSignalKind::PartialReady);
  EXPECT_EQ(seen[0].at, Time::from_ns(50));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(seen[i].kind, DamSignalKind::Retired);
}

TEST_F(DamTest, ZeroExpectedRetiresEveryGroup) {
  dam.add_tiling(tiling());
  dam.set_expected_total(0);
  sim.run();
  ASSERT_EQ(seen.size(), 4u);
  for (const auto& s : seen) EXPECT_EQ(s.kind, DamSignalKind::Retired);
}

TEST_F(DamTest, OnlyTheCountedPartOfARowCounts) {
  // Rows of 272 B: 256 B of data and a 16 B source-metadata column sent with st.rowsp.nop.
  dam.add_tiling(ConsumerTiling{0, 272, 256, 2, 2, 0});
  ack_at(Time::zero(), 0, 272);    // row 0 whole: 256 counted
  ack_at(Time::zero(), 272 + 256, 16);  // row 1's metadata: nothing counted
  sim.run();
  EXPECT_EQ(dam.counter(0), 256u);
  EXPECT_TRUE(seen.empty());
  ack_at(Time::from_ns(5), 272, 256);
  sim.run();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].at.ps(), 7000);
}

TEST_F(DamTest, UnmatchedAcksAndResetDropNothingSilently) {
  dam.add_tiling(tiling());
  ack_at(Time::zero(), 0x999999, 128);
  sim.run();
  EXPECT_EQ(dam.counters().unmatched_ack_bytes, 128u);
  dam.on_write_ack(row(0), 1024);  // in the lookup pipeline when the DAM is reset
  dam.reset();
  sim.run();
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(dam.table().entries().empty());
}

// Acks that complete in one hub cycle share one event; each still counts in arrival order, and
// the release comes in the cycle of the ack that completes the tile.
TEST_F(DamTest, AcksOfOneCycleShareAnEvent) {
  dam.add_tiling(tiling());
  // 1024 B for group 10 in eight 128 B acks. A lookup starts at the first cycle edge at or after
  // the ack: four acks (1, 100, 500, 1000 ps) start at 1000 ps, four (1001, 1500, 1900,
  // 2000 ps) at 2000 ps; two cycles later their lookups end, at 3000 and 4000 ps.
  const int64_t arrivals[8] = {1, 100, 500, 1000, 1001, 1500, 1900, 2000};
  for (int i = 0; i < 8; ++i) ack_at(Time::from_ps(arrivals[i]), row(0) + 128 * static_cast<uint64_t>(i), 128);
  const uint64_t events = sim.run();
  EXPECT_EQ(events, 8u + 2u);  // the eight arrivals, one lookup event per cycle
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].at.ps(), 4000);
  EXPECT_EQ(seen[0].counted_bytes, 1024u);
  // Acks in the pipeline when the DAM is reset are dropped with it, those after it are not.
  dam.on_write_ack(row(4), 128);
  dam.reset();
  dam.add_tiling(tiling());
  dam.on_write_ack(row(4), 1024);
  sim.run();
  EXPECT_EQ(dam.counter(11), 1024u);
}

TEST(Dam, TooSmallTablesAndCountersAreConfigurationErrors) {
  Simulator sim;
  DataAvailabilityManager dam(sim, small_dam(3), [](const DamSignal&) {});
  try {
    dam.add_tiling(ConsumerTiling{0, 256, 256, 4, 14, 0});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "hub.dam.table_entries");
  }
  EXPECT_TRUE(dam.table().entries().empty());  // nothing half-programmed
  DamConfig narrow = small_dam();
  narrow.counter_bits = 10;  // counts up to 1023 B: a 1024 B tile does not fit
  DataAvailabilityManager small(sim, narrow, [](const DamSignal&) {});
  EXPECT_THROW(small.add_tiling(ConsumerTiling{0, 256, 256, 4, 4, 0}), UserError);
  narrow.global_counter_bits = 8;
  DataAvailabilityManager tiny(sim, narrow, [](const DamSignal&) {});
  EXPECT_THROW(tiny.set_expected_total(256), UserError);
}

// The overlap search (a lower bound widened by the longest entry) against a brute-force scan:
// entries of uneven length with a gap, queries ascending, descending and scattered, and again
// after an entry is inserted in front of the others.
TEST(DependencyTableOverlap, AnswersDoNotDependOnQueryOrder) {
  DependencyTable table(64);
  const auto brute = [&](uint64_t address, uint64_t bytes) {
    std::vector<std::pair<uint32_t, uint64_t>> out;
    for (const DependencyEntry& e : table.entries()) {
      const uint64_t lo = std::max(address, e.begin), hi = std::min(address + bytes, e.end);
      if (lo < hi) out.emplace_back(e.group, hi - lo);
    }
    return out;
  };
  const auto query = [&](uint64_t address, uint64_t bytes) {
    std::vector<std::pair<uint32_t, uint64_t>> out;
    table.for_each_overlap(address, bytes, [&](const DependencyEntry& e, uint64_t n) { out.emplace_back(e.group, n); });
    return out;
  };
  uint64_t at = 1000;
  for (uint32_t g = 0; g < 20; ++g) {
    const uint64_t len = 100 + 37 * (g % 5);
    table.add(DependencyEntry{at, at + len, g, len, 0, 0});
    at += len + (g == 9 ? 500 : 0);  // a gap after group 9
  }
  std::vector<uint64_t> addresses;
  for (uint64_t a = 900; a < at + 200; a += 61) addresses.push_back(a);
  const std::vector<uint64_t> forward = addresses;
  std::reverse(addresses.begin(), addresses.end());
  const std::vector<uint64_t> backward = addresses;
  for (const auto* order : {&forward, &backward}) {
    for (uint64_t a : *order) {
      for (uint64_t bytes : {1, 64, 300}) EXPECT_EQ(query(a, bytes), brute(a, bytes)) << a << "+" << bytes;
    }
  }
  for (size_t i = 0; i < forward.size(); ++i) {
    const uint64_t a = forward[(i * 7) % forward.size()];
    EXPECT_EQ(query(a, 128), brute(a, 128)) << a;
  }
  table.add(DependencyEntry{500, 600, 99, 100, 0, 0});  // in front of every other entry
  for (uint64_t a : forward) EXPECT_EQ(query(a, 128), brute(a, 128)) << a;
  EXPECT_EQ(query(550, 10), (std::vector<std::pair<uint32_t, uint64_t>>{{99, 10}}));
}

}  // namespace
}  // namespace moehub
