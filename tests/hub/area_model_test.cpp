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
  // Logic: round cell areas so each block's area can be added up by hand.
  c.aau.rat_banks = 4;
  c.aau.rat_ports_per_bank = 2;  // 8 lookup lanes
  c.area.nand2_um2 = 1;
  c.area.xor2_um2 = 2;
  c.area.ao22_um2 = 3;
  c.area.half_adder_um2 = 4;
  c.area.full_adder_um2 = 5;
  c.area.flip_flop_um2 = 10;
  c.area.logic_utilization = 0.5;
  c.area.xbar_ports = 2;
  c.area.sm_count = 3;
  return c;
}

const LogicItem& block(const AreaEstimate& e, const std::string& name) {
  for (const LogicItem& it : e.logic) {
    if (it.block == name) return it;
  }
  throw std::logic_error("no block " + name);
}

CellCounts cells(uint64_t nand2, uint64_t xor2, uint64_t ao22, uint64_t ha, uint64_t fa, uint64_t ff) {
  CellCounts c;
  c[LogicCell::Nand2] = nand2;
  c[LogicCell::Xor2] = xor2;
  c[LogicCell::Ao22] = ao22;
  c[LogicCell::HalfAdder] = ha;
  c[LogicCell::FullAdder] = fa;
  c[LogicCell::FlipFlop] = ff;
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

TEST(AreaLogic, GateFormulas) {
  using namespace gates;
  EXPECT_EQ(decoder(1), CellCounts{});
  EXPECT_EQ(decoder(2), cells(2, 0, 0, 0, 0, 0));    // 2 outputs of a 1-bit index: one gate each
  EXPECT_EQ(decoder(16), cells(48, 0, 0, 0, 0, 0));  // 16 x (4 - 1)
  EXPECT_EQ(encoder(2), CellCounts{});               // the index is the second line itself
  EXPECT_EQ(encoder(64), cells(186, 0, 0, 0, 0, 0)); // 6 bits x (32 - 1)
  EXPECT_EQ(priority_encoder(32), cells(138, 0, 0, 0, 0, 0));  // 2 x 32 - 1 + 5 x 15
  EXPECT_EQ(mux(1, 9), CellCounts{});
  EXPECT_EQ(mux(8, 3), cells(9, 0, 12, 0, 0, 0));    // per bit 4 AO22 + 3-gate OR
  EXPECT_EQ(mux(3, 1), cells(1, 0, 2, 0, 0, 0));     // odd: ceil(3/2) = 2 AO22
  EXPECT_EQ(equality(1), cells(0, 1, 0, 0, 0, 0));
  EXPECT_EQ(equality(8), cells(7, 8, 0, 0, 0, 0));
  EXPECT_EQ(multiplier(3, 4), cells(12, 0, 0, 0, 8, 0));
  EXPECT_EQ(min_tree(4, 8), cells(0, 0, 30, 0, 24, 0));  // 3 x (8 FA + 2:1 mux of 8 + 2 index bits)
  EXPECT_EQ(min_tree(1, 8), CellCounts{});
}

// Hand count of every block of tiny_hub(): widths region 2, key 34, LocalRowID 10, RowSize 13,
// RPM tag 55 (+3 flags), mask 32, age 7, st.rowsp header 16+2+32+12+2 = 64 (24 beyond 40).
TEST(AreaLogic, BlocksOfATinyHubCountedByHand) {
  const AreaEstimate e = estimate_area(tiny_hub());
  // 8 lanes: hash 34 - 2 = 32 XOR2 + decoder(4) = 4.
  EXPECT_EQ(block(e, "rat.bank_select").cells, cells(4 * 8, 32 * 8, 0, 0, 0, 0));
  // mux(8, 45) = 180 AO22 + 135 NAND2; mux(8, 11) = 44 + 33; x 8 lanes.
  EXPECT_EQ(block(e, "rat.crossbar").cells, cells(168 * 8, 0, 224 * 8, 0, 0, 0));
  EXPECT_EQ(block(e, "rat.tag_compare").cells, cells(34 * 8, 34 * 8, 0, 0, 0, 0));
  EXPECT_EQ(block(e, "rat.fifo").cells, cells(0, 0, 0, 8, 0, 8));
  // 4 match latches + encoder(4) 2 + key 2 FF + incrementer(11) + comparator(11).
  EXPECT_EQ(block(e, "apt.match").cells, cells(2, 0, 0, 11, 11, 6));
  // multiplier(10, 13) = 130 NAND2 + 117 FA; 2 x adder(40); 40 FF; x 8 lanes.
  EXPECT_EQ(block(e, "aau.address").cells, cells(130 * 8, 0, 0, 0, 197 * 8, 40 * 8));
  // key 58 FF + 4 latches; encoder(4) 2 + priority_encoder(4) 7 + 2; x 2 partitions.
  EXPECT_EQ(block(e, "rpm.match").cells, cells(11 * 2, 0, 0, 0, 0, 62 * 2));
  EXPECT_EQ(block(e, "rpm.merge").cells, cells(63 * 2, 0, 0, 0, 0, 4 * 2));
  // 12 eligibility gates + min_tree(4, 38) = 3 x (38 FA + 40 AO22).
  EXPECT_EQ(block(e, "rpm.scheduler").cells, cells(12 * 2, 0, 120 * 2, 0, 114 * 2, 0));
  // 2 x priority_encoder(2) = 6; pointer 1 FF; mux(2, 1024 + 32 + 58) = 1114 AO22.
  EXPECT_EQ(block(e, "rpm.egress").cells, cells(6, 0, 1114, 0, 0, 1));
  EXPECT_EQ(block(e, "rpm.timers").copies, 8u);
  EXPECT_EQ(block(e, "rpm.timers").cells, cells(6 * 8, 7 * 8, 0, 7 * 8, 0, 0));
  EXPECT_EQ(block(e, "dam.range_match").cells, cells(2 * 8, 0, 0, 0, 93 * 8, 0));
  EXPECT_EQ(block(e, "dam.ack_input").cells, cells(0, 0, 0, 0, 40, 53));
  EXPECT_EQ(block(e, "dam.counters").cells, cells(0, 0, 0, 0, 40 * 8, 0));
  // priority_encoder(8) = 15 + 9; global adder(30); equality(30) = 30 XOR2 + 29.
  EXPECT_EQ(block(e, "dam.ready").cells, cells(53, 30, 0, 0, 30, 0));
  EXPECT_EQ(block(e, "hub.xbar_ports").cells, cells(0, 0, 64 * 2, 0, 0, 26 * 2));
  EXPECT_EQ(block(e, "sm.rowsp_decode").cells, cells(0, 0, 64 * 3, 0, 0, 26 * 3));
}

TEST(AreaLogic, AreaIsCellsTimesCellAreaOverUtilization) {
  const AreaEstimate e = estimate_area(tiny_hub());
  // Per block (um^2): 544 + 6720 + 816 + 112 + 161 + 12120 + 1262 + 206 + 1884 + 3358 + 384
  // + 3736 + 730 + 1600 + 263 + 904 + 1356 = 36156.
  EXPECT_DOUBLE_EQ(block(e, "aau.address").cell_um2, 12120);
  EXPECT_DOUBLE_EQ(block(e, "aau.address").mm2, 12120 / 0.5 / 1e6);
  EXPECT_DOUBLE_EQ(block(e, "rpm.egress").nand2_eq, 3358);  // NAND2 area 1 um^2
  EXPECT_DOUBLE_EQ(e.logic_cell_um2, 36156);
  EXPECT_DOUBLE_EQ(e.logic_mm2, 36156 / 0.5 / 1e6);
  EXPECT_DOUBLE_EQ(e.storage_and_logic_mm2, e.total_mm2 + e.logic_mm2);
  EXPECT_DOUBLE_EQ(e.storage_and_logic_die_fraction, e.storage_and_logic_mm2 / 100.0);
  CellCounts sum;
  for (const LogicItem& it : e.logic) sum += it.cells;
  EXPECT_EQ(e.logic_cells, sum);
  const auto j = e.to_json();
  EXPECT_DOUBLE_EQ(j["logic_mm2"].get<double>(), e.logic_mm2);
  EXPECT_DOUBLE_EQ(j["storage_mm2"].get<double>(), e.total_mm2);
  EXPECT_DOUBLE_EQ(j["storage_and_logic_mm2"].get<double>(), e.total_mm2 + e.logic_mm2);
  EXPECT_EQ(j["logic"].size(), e.logic.size());
  EXPECT_EQ(j["logic_cells"]["flip_flop"].get<uint64_t>(), e.logic_cells[LogicCell::FlipFlop]);
}

TEST(AreaLogic, FollowsTheConfiguredStructures) {
  const AreaEstimate base = estimate_area(tiny_hub());
  HubConfig c = tiny_hub();
  c.area.sm_count = 6;
  EXPECT_DOUBLE_EQ(block(estimate_area(c), "sm.rowsp_decode").cell_um2, 2 * block(base, "sm.rowsp_decode").cell_um2);
  c = tiny_hub();
  c.rpm.timer_bypass = Time::zero();  // no bypass: no timers
  EXPECT_EQ(block(estimate_area(c), "rpm.timers").cells, CellCounts{});
  c = tiny_hub();
  c.aau.rat_banks = 1;
  c.aau.rat_ports_per_bank = 1;  // one lane, one bank: nothing to select or cross
  EXPECT_EQ(block(estimate_area(c), "rat.bank_select").cells, CellCounts{});
  EXPECT_EQ(block(estimate_area(c), "rat.crossbar").cells, CellCounts{});
  c = tiny_hub();
  c.area.logic_utilization = 0.25;
  const AreaEstimate dense = estimate_area(c);
  EXPECT_DOUBLE_EQ(dense.logic_mm2, 2 * base.logic_mm2);
  EXPECT_DOUBLE_EQ(dense.total_mm2, base.total_mm2);  // storage does not move
  c = tiny_hub();
  c.rpm.entries_per_peer = 8;  // min tree 7 stages of (38 FA + 2:1 mux of 38 + 3)
  EXPECT_EQ(block(estimate_area(c), "rpm.scheduler").cells, cells(24 * 2, 0, 7 * 41 * 2, 0, 7 * 38 * 2, 0));
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
