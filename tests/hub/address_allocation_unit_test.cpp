#include <gtest/gtest.h>

#include <map>
#include <set>

#include "hub/address_allocation_unit.h"
#include "hub/row_allocation_table.h"
#include "hub_test_support.h"
#include "sim/rng.h"

namespace moehub {
namespace {

using test::FakeMemory;
using test::small_aau;

struct Arrived {
  Time at;
  Placement p;
};

class AauTest : public ::testing::Test {
 protected:
  void make(const AauConfig& cfg) {
    aau = std::make_unique<AddressAllocationUnit>(sim, cfg, 0, mem.access());
    region = MallocId::encode(0, aau->register_region(kBase, kRow, 64));
  }
  void arrive_at(Time t, uint64_t row, uint64_t offset, std::vector<Arrived>& out) {
    sim.schedule_at(t, [this, row, offset, &out] {
      aau->arrive(RowspStore{region, row, offset, 128, false}, [this, &out](const Placement& p) {
        out.push_back({sim.now(), p});
      });
    });
  }
  static constexpr uint64_t kBase = 0x40000;
  static constexpr uint64_t kRow = 1024;
  Simulator sim;
  FakeMemory mem{sim, Time::from_ns(100), {}};
  std::unique_ptr<AddressAllocationUnit> aau;
  MallocId region;
};

// 1 GHz: lookup 2 cycles, APT 1 cycle. One bank with one port: same-cycle accesses serialise.
TEST_F(AauTest, HitMissAndBankTimingAreExact) {
  make(small_aau(16, 1, 1));
  std::vector<Arrived> got;
  arrive_at(Time::zero(), 7, 0, got);    // slot 0: miss, allocate -> cycle 0+2+1 = 3
  arrive_at(Time::zero(), 7, 128, got);  // slot 1 (bank busy at 0): hit -> 1+2 = 3
  arrive_at(Time::zero(), 8, 0, got);    // slot 2: miss -> 2+2+1 = 5 (the fills sit at cycles 3 and 5)
  sim.run();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].at.ps(), 3000);
  EXPECT_EQ(got[0].p.local_row_id, 0u);
  EXPECT_EQ(got[0].p.address, kBase);
  EXPECT_EQ(got[1].at.ps(), 3000);
  EXPECT_EQ(got[1].p.local_row_id, 0u);
  EXPECT_EQ(got[1].p.address, kBase + 128);
  EXPECT_EQ(got[2].at.ps(), 5000);
  EXPECT_EQ(got[2].p.address, kBase + kRow);
  EXPECT_EQ(aau->rat_hits(), 1u);
  EXPECT_EQ(aau->rat_misses(), 2u);
  EXPECT_EQ(aau->counters().rat_bank_conflict_cycles, 3u);  // 1 + 2 cycles waited by the 2nd and 3rd lookups
  EXPECT_TRUE(mem.ops.empty());
}

// Answers due in the same cycle as the answer asked just before share its event, and keep
// the order they were asked in: the three lookups above cost two answer events, not three.
TEST_F(AauTest, AnswersOfOneCycleShareAnEvent) {
  make(small_aau(16, 1, 1));
  std::vector<Arrived> got;
  arrive_at(Time::zero(), 7, 0, got);    // answered at 3000 ps
  arrive_at(Time::zero(), 7, 128, got);  // 3000 ps: joins the first answer's event
  arrive_at(Time::zero(), 8, 0, got);    // 5000 ps
  EXPECT_EQ(sim.run(), 3u + 2u);  // three arrivals, two answer events
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].p.address, kBase);
  EXPECT_EQ(got[1].p.address, kBase + 128);
  EXPECT_EQ(got[1].at.ps(), 3000);
  EXPECT_EQ(got[2].at.ps(), 5000);
  // Once the shared event has run, an answer for a later cycle needs its own.
  arrive_at(Time::from_ns(10), 7, 256, got);
  EXPECT_EQ(sim.run(), 2u);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].p.address, kBase + 256);
}

TEST_F(AauTest, DifferentBanksDoNotConflict) {
  make(small_aau(16, 2, 1));
  RowAllocationTable probe(16, 2, 1);
  uint64_t other = 1;
  while (probe.bank_of({region.region(), other}) == probe.bank_of({region.region(), 0})) ++other;
  std::vector<Arrived> got;
  arrive_at(Time::zero(), 0, 0, got);
  arrive_at(Time::zero(), other, 0, got);
  sim.run();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].at.ps(), 3000);
  EXPECT_EQ(got[1].at.ps(), 3000);
  EXPECT_EQ(aau->counters().rat_bank_conflict_cycles, 0u);
}

// A one-entry RAT: B evicts A (a spill write); a late packet of A reads the spill area and
// restores LocalRowID 0; a packet of A arriving during that read waits for it; a new row C must
// also read the spill area before it may allocate.
TEST_F(AauTest, EvictionAndRestoreKeepTheRowWhole) {
  make(small_aau(1));
  std::vector<Arrived> got;
  arrive_at(Time::zero(), 100, 0, got);            // A: local 0 at 3 ns
  arrive_at(Time::zero(), 200, 0, got);            // B: local 1 at 3 ns, evicts A
  arrive_at(Time::from_ns(10), 100, 128, got);     // A late: read issued at 12 ns, back at 112, +2 -> 114 ns
  arrive_at(Time::from_ns(50), 100, 256, got);     // joins the outstanding read -> 114 ns
  arrive_at(Time::from_ns(200), 300, 0, got);      // C: read 202 -> 302, +2 +1 (APT) -> 305 ns, local 2
  sim.run();
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].at.ps(), 3000);
  EXPECT_EQ(got[1].at.ps(), 3000);
  EXPECT_EQ(got[1].p.local_row_id, 1u);
  EXPECT_EQ(got[2].at.ps(), 114000);
  EXPECT_EQ(got[3].at.ps(), 114000);
  for (int i : {2, 3}) {
    EXPECT_EQ(got[i].p.local_row_id, 0u);
    EXPECT_TRUE(got[i].p.restored);
  }
  EXPECT_EQ(got[2].p.address, kBase + 128);
  EXPECT_EQ(got[3].p.address, kBase + 256);
  EXPECT_EQ(got[4].at.ps(), 305000);
  EXPECT_EQ(got[4].p.local_row_id, 2u);
  EXPECT_FALSE(got[4].p.restored);
  EXPECT_EQ(aau->rat_misses(), 4u);
  EXPECT_EQ(aau->rat_evictions(), 3u);  // A by B, B by A, A by C
  EXPECT_EQ(aau->rat_restores(), 1u);
  EXPECT_EQ(aau->counters().rat_pending_joins, 1u);
  EXPECT_EQ(mem.count(MemoryOp::Write), 3u);
  EXPECT_EQ(mem.count(MemoryOp::Read), 2u);
  EXPECT_EQ(aau->counters().spill_write_bytes, 96u);
}

TEST_F(AauTest, OverflowIsCountedAndFailsTheRunWithoutOverwriting) {
  aau = std::make_unique<AddressAllocationUnit>(sim, small_aau(16), 0, mem.access());
  region = MallocId::encode(0, aau->register_region(kBase, kRow, 2));
  std::vector<Arrived> got;
  arrive_at(Time::zero(), 1, 0, got);
  arrive_at(Time::zero(), 2, 0, got);
  arrive_at(Time::zero(), 3, 0, got);
  arrive_at(Time::from_ns(5), 3, 128, got);
  arrive_at(Time::from_ns(5), 1, 128, got);
  sim.run();
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[2].p.status, PlacementStatus::RegionOverflow);  // row 3 at 3 ns
  EXPECT_EQ(got[3].at.ps(), 7000);                              // row 1 hit: 5 + 2 ns
  EXPECT_EQ(got[3].p.status, PlacementStatus::Placed);
  EXPECT_EQ(got[3].p.local_row_id, 0u);
  EXPECT_EQ(got[4].at.ps(), 8000);                              // row 3 again: 5 + 2 + 1 ns
  EXPECT_EQ(got[4].p.status, PlacementStatus::RegionOverflow);
  EXPECT_EQ(aau->region_overflows(), 2u);
  EXPECT_EQ(aau->apt().find(region.region())->row_pointer, 2u);
  EXPECT_TRUE(aau->failed());
  try {
    aau->throw_if_failed();
    FAIL();
  } catch (const RowspError& e) {
    EXPECT_EQ(e.kind(), RowspErrorKind::RegionOverflow);
    EXPECT_NE(e.reason().find("capacity of 2 rows"), std::string::npos);
  }
}

// Property: many producers send rows in random interleavings at random times; whatever the RAT
// size, every packet of a row lands in the same LocalRowID and the rows fill 0..N-1 exactly once.
TEST(AauProperty, AllocationIsDenseUniqueAndWholeUnderAnyArrivalOrder) {
  for (uint32_t rat_entries : {4096u, 8u, 1u}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      Simulator sim;
      FakeMemory mem{sim, Time::from_ns(80), {}};
      AddressAllocationUnit aau(sim, small_aau(rat_entries, 4, 1), 3, mem.access());
      constexpr uint64_t kRow = 512, kPieces = 4, kProducers = 7, kRowsEach = 30;
      const MallocId id = MallocId::encode(3, aau.register_region(0x10000, kRow, kProducers * kRowsEach));
      Rng rng(seed, rat_entries);
      std::map<uint64_t, std::set<uint64_t>> local_of_row;
      uint64_t placed = 0;
      for (uint64_t p = 0; p < kProducers; ++p) {
        for (uint64_t r = 0; r < kRowsEach; ++r) {
          const uint64_t row_id = p * 1000 + r;  // globally unique RowIDs
          for (uint64_t piece = 0; piece < kPieces; ++piece) {
            const Time t = Time::from_ps(static_cast<int64_t>(rng.below(2000000)));
            sim.schedule_at(t, [&, row_id, piece] {
              aau.arrive(RowspStore{id, row_id, piece * 128, 128, false}, [&, row_id, piece](const Placement& pl) {
                ASSERT_EQ(pl.status, PlacementStatus::Placed);
                EXPECT_EQ(pl.address, 0x10000 + pl.local_row_id * kRow + piece * 128);
                local_of_row[row_id].insert(pl.local_row_id);
                ++placed;
              });
            });
          }
        }
      }
      sim.run();
      ASSERT_EQ(placed, kProducers * kRowsEach * kPieces);
      std::set<uint64_t> locals;
      for (const auto& [row, set] : local_of_row) {
        ASSERT_EQ(set.size(), 1u) << "row " << row << " split across LocalRowIDs (RAT " << rat_entries << ")";
        locals.insert(*set.begin());
      }
      ASSERT_EQ(locals.size(), kProducers * kRowsEach);
      EXPECT_EQ(*locals.begin(), 0u);
      EXPECT_EQ(*locals.rbegin(), kProducers * kRowsEach - 1);
      EXPECT_EQ(aau.apt().find(id.region())->row_pointer, kProducers * kRowsEach);
      if (rat_entries == 1) {
        EXPECT_GT(aau.rat_evictions(), 0u);
        EXPECT_GT(aau.rat_restores(), 0u);
      }
      if (rat_entries == 4096) {
        EXPECT_EQ(aau.rat_evictions(), 0u);
        EXPECT_EQ(aau.rat_misses(), kProducers * kRowsEach);
      }
    }
  }
}

TEST(RowAllocationTable, EvictsFirstInFirstOutAndFlushesByRegion) {
  RowAllocationTable rat(3, 1, 1);
  EXPECT_FALSE(rat.insert({0, 1}, 10));
  EXPECT_FALSE(rat.insert({1, 2}, 11));
  EXPECT_FALSE(rat.insert({0, 3}, 12));
  auto ev = rat.insert({0, 4}, 13);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->key, (RatKey{0, 1}));
  EXPECT_EQ(ev->local_row_id, 10u);
  rat.flush_region(0);
  EXPECT_EQ(rat.size(), 1u);
  EXPECT_EQ(rat.lookup({1, 2}), 11u);
  EXPECT_FALSE(rat.insert({0, 5}, 14));
  EXPECT_FALSE(rat.insert({0, 6}, 15));
  ev = rat.insert({0, 7}, 16);  // the oldest surviving mapping goes first
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->key, (RatKey{1, 2}));
  EXPECT_THROW(rat.insert({0, 7}, 1), std::logic_error);
}

}  // namespace
}  // namespace moehub
