#include <gtest/gtest.h>

#include "hub/area_model.h"

namespace moehub {
namespace {

HubConfig tiny_hub() {
  HubConfig c;
  c.address_bits = 40;
  c.aau.clock = Frequency::hertz(1000000000);
  c.aau.rat_entries = 16;
  c.aau.apt_entries = 4;  // region field: 2 bits
  c.aau.row_id_bits = 32;
  c.aau.local_row_id_bits = 10;
  c.aau.row_offset_bits = 12;
  c.rpm.clock = c.aau.clock;
  c.rpm.partitions = 2;
  c.rpm.entries_per_peer = 4;
  c.rpm.entry_bytes = 128;
  c.rpm.mask_granule_bytes = 4;
  c.rpm.timer_bypass = Time::from_ns(100);  // 100 cycles: a 7-bit age counter
  c.dam.table_entries = 8;
  c.dam.counter_bits = 20;
  c.dam.global_counter_bits = 30;
  c.area.technology_nm = 7;
  c.area.sram_mbit_per_mm2 = 1.0;  // 1e6 bits per mm^2: mm^2 = bits x factor / 1e6
  c.area.dual_port_factor = 2.0;
  c.area.cam_factor = 3.0;
  c.area.gpu_die_mm2 = 100.0;
  return c;
}

const AreaItem& item(const AreaEstimate& e, const std::string& name) {
  for (const AreaItem& it : e.items) {
    if (it.structure == name) return it;
  }
  throw std::logic_error("no item " + name);
}

TEST(AreaModel, BitsFollowTheConfiguredStructures) {
  const AreaEstimate e = estimate_area(tiny_hub());
  EXPECT_EQ(item(e, "rat.tags").bits(), 16u * (1 + 2 + 32));
  EXPECT_EQ(item(e, "rat.data").bits(), 16u * 10);
  EXPECT_EQ(item(e, "apt.tags").bits(), 4u * 3);
  EXPECT_EQ(item(e, "apt.data").bits(), 4u * (40 + 13 + 11 + 11 + 1));
  // RPM tag: max(line address 40-7 = 33, MallocID 16+2 + RowID 32 + line 12-7 = 5) = 55, + 3 flags.
  EXPECT_EQ(item(e, "rpm.tags").bits(), 8u * 58);
  EXPECT_EQ(item(e, "rpm.data").bits(), 8u * 1024);
  EXPECT_EQ(item(e, "rpm.mask_age").bits(), 8u * (32 + 7));
  EXPECT_EQ(item(e, "dam.table_ranges").bits(), 8u * 81);
  EXPECT_EQ(item(e, "dam.table_data").bits(), 8u * (3 + 20 + 13 + 13));
  EXPECT_EQ(item(e, "dam.counters").bits(), 8u * 21);
  EXPECT_EQ(item(e, "dam.global").bits(), 60u);
  uint64_t total = 0;
  for (const AreaItem& it : e.items) total += it.bits();
  EXPECT_EQ(e.total_bits, total);
}

TEST(AreaModel, AreaIsBitsTimesCellFactorOverDensity) {
  const AreaEstimate e = estimate_area(tiny_hub());
  EXPECT_DOUBLE_EQ(item(e, "rat.tags").mm2, 560 * 2.0 / 1e6);
  EXPECT_DOUBLE_EQ(item(e, "apt.tags").mm2, 12 * 3.0 / 1e6);
  EXPECT_DOUBLE_EQ(item(e, "rpm.data").mm2, 8192 / 1e6);
  double sum = 0;
  for (const AreaItem& it : e.items) sum += it.mm2;
  EXPECT_DOUBLE_EQ(e.total_mm2, sum);
  EXPECT_DOUBLE_EQ(e.die_fraction, sum / 100.0);
  const auto j = e.to_json();
  EXPECT_DOUBLE_EQ(j["total_mm2"].get<double>(), sum);
  EXPECT_EQ(j["paper"]["total_mm2"], 0.49);
  EXPECT_EQ(j["structures"].size(), e.items.size());
}

TEST(AreaModel, ScalesWithTheTablesAndTheDensity) {
  HubConfig c = tiny_hub();
  const AreaEstimate base = estimate_area(c);
  c.aau.rat_entries *= 2;
  EXPECT_EQ(item(estimate_area(c), "rat.tags").bits(), 2 * item(base, "rat.tags").bits());
  c = tiny_hub();
  c.area.sram_mbit_per_mm2 = 2.0;
  EXPECT_DOUBLE_EQ(estimate_area(c).total_mm2, base.total_mm2 / 2);
  c = tiny_hub();
  c.rpm.timer_bypass = Time::zero();  // no bypass: no age counter
  EXPECT_EQ(item(estimate_area(c), "rpm.mask_age").bits_per_entry, 32u);
}

TEST(AreaModel, IndexBits) {
  EXPECT_EQ(index_bits(1), 1u);
  EXPECT_EQ(index_bits(2), 1u);
  EXPECT_EQ(index_bits(3), 2u);
  EXPECT_EQ(index_bits(64), 6u);
  EXPECT_EQ(index_bits(65), 7u);
}

}  // namespace
}  // namespace moehub
