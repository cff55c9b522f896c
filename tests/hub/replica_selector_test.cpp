#include <gtest/gtest.h>

#include "hub/area_model.h"
#include "hub/replica_selector.h"

namespace moehub {
namespace {

ReplicaTableConfig table(ReplicaPolicy policy) { return ReplicaTableConfig{policy, 4, 3, 2, 32}; }

TEST(ReplicaSelector, RoundRobinCyclesThroughTheEntry) {
  ReplicaSelector hub(table(ReplicaPolicy::RoundRobin), 0, 4);
  const uint32_t e = hub.add_entry({{1, 10}, {2, 11}, {3, 12}});
  std::vector<uint32_t> picks;
  for (int i = 0; i < 5; ++i) picks.push_back(hub.select(e));
  EXPECT_EQ(picks, (std::vector<uint32_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(hub.counters().round_robin_selections, 5u);
  EXPECT_EQ(hub.counters().lookups, 5u);
  EXPECT_EQ(hub.counters().lookup_cycles, 10u);  // 2 cycles each
  EXPECT_EQ(hub.rows_to_gpu(), (std::vector<uint64_t>{0, 2, 2, 1}));
}

// The hub on GPU 0 has sent 2 rows to GPU 1 (no replicas). Entry {GPU 1, GPU 2}:
// rows to GPU 1/2 = 2/0 -> GPU 2; 2/1 -> GPU 2; 2/2 tie -> the lower index, GPU 1; 3/2 -> GPU 2.
TEST(ReplicaSelector, LoadAwareTakesTheLeastServedPeer) {
  ReplicaSelector hub(table(ReplicaPolicy::LoadAware), 0, 4);
  const uint32_t e = hub.add_entry({{1, 7}, {2, 8}});
  hub.note_row(1);
  hub.note_row(1);
  std::vector<uint32_t> picks;
  for (int i = 0; i < 4; ++i) picks.push_back(hub.select(e));
  EXPECT_EQ(picks, (std::vector<uint32_t>{1, 1, 0, 1}));
  EXPECT_EQ(hub.rows_to_gpu(), (std::vector<uint64_t>{0, 3, 3, 0}));
  // A replica on the hub's own GPU counts as local.
  const uint32_t local = hub.add_entry({{0, 3}, {3, 4}});
  EXPECT_EQ(hub.select(local), 0u);  // GPUs 0 and 3 both at 0 rows: the lower index
  EXPECT_EQ(hub.counters().local_selections, 1u);
  EXPECT_EQ(hub.counters().load_aware_selections, 5u);
  EXPECT_EQ(hub.counters().round_robin_selections, 0u);
}

TEST(ReplicaSelector, TableLimitsAreLogicErrors) {
  ReplicaSelector hub(table(ReplicaPolicy::RoundRobin), 0, 4);
  EXPECT_THROW(hub.add_entry({{1, 1}, {2, 2}, {3, 3}, {0, 4}}), std::logic_error);  // 4 > max_replicas 3
  EXPECT_THROW(hub.add_entry({{9, 1}}), std::logic_error);                          // no GPU 9
  for (int i = 0; i < 4; ++i) hub.add_entry({{1, 1}, {2, 2}});
  EXPECT_THROW(hub.add_entry({{1, 1}, {2, 2}}), std::logic_error);  // 4 entries
}

// Storage by hand: region field index_bits(64) = 6, MallocID 16 + 6 = 22, index_bits(4) = 2.
// tags 64 x (1 + 22) = 1472 CAM bits; data 64 x (4 x 22 + 2 x 2) = 5888; counters 8 x 32 = 256.
TEST(ReplicaTableArea, StorageBitsByHand) {
  HubConfig c;
  c.aau.apt_entries = 64;
  c.replica = ReplicaTableConfig{ReplicaPolicy::RoundRobin, 64, 4, 1, 32};
  c.area.sram_mbit_per_mm2 = 1.0;  // 1e6 bits per mm^2
  c.area.cam_factor = 2.0;
  c.area.gpu_die_mm2 = 100;
  c.area.nand2_um2 = c.area.xor2_um2 = c.area.ao22_um2 = c.area.half_adder_um2 = c.area.full_adder_um2 = 1;
  c.area.flip_flop_um2 = 1;
  c.area.logic_utilization = 1;
  const AreaEstimate a = estimate_replica_table_area(c, 8);
  ASSERT_EQ(a.items.size(), 3u);
  EXPECT_EQ(a.items[0].bits(), 1472u);
  EXPECT_EQ(a.items[1].bits(), 5888u);
  EXPECT_EQ(a.items[2].bits(), 256u);
  EXPECT_EQ(a.total_bits, 7616u);
  EXPECT_NEAR(a.total_mm2, (1472.0 * 2 + 5888 + 256) / 1e6, 1e-12);
  EXPECT_GT(a.logic_mm2, 0.0);
}

}  // namespace
}  // namespace moehub
