#include "hub/area_model.h"

#include <fmt/format.h>

namespace moehub {

const char* storage_cell_name(StorageCell cell) {
  switch (cell) {
    case StorageCell::SinglePortSram: return "sram";
    case StorageCell::DualPortSram: return "sram-dual-port";
    case StorageCell::Cam: return "cam";
  }
  return "unknown";
}

uint32_t index_bits(uint64_t n) {
  uint32_t b = 1;
  while (b < 64 && (uint64_t{1} << b) < n) ++b;
  return b;
}

AreaEstimate estimate_area(const HubConfig& c) {
  const AauConfig& a = c.aau;
  const RpmConfig& r = c.rpm;
  const DamConfig& d = c.dam;
  const uint32_t region = index_bits(a.apt_entries);  // MallocID region field (the GPU part is implicit at the hub)
  const uint32_t line_bits = index_bits(r.entry_bytes);
  const uint32_t local = a.local_row_id_bits;
  const uint32_t count = local + 1;  // RowPointer and capacity reach 2^bits

  AreaEstimate e;
  e.technology_nm = c.area.technology_nm;
  e.sram_mbit_per_mm2 = c.area.sram_mbit_per_mm2;
  auto add = [&e](std::string name, StorageCell cell, uint64_t entries, uint64_t bits, std::string fields) {
    e.items.push_back(AreaItem{std::move(name), cell, entries, bits, std::move(fields)});
  };

  // RAT: the paper's 16-bank dual-port SRAM (VI-E).
  add("rat.tags", StorageCell::DualPortSram, a.rat_entries, 1 + region + a.row_id_bits,
      fmt::format("valid 1 + region {} + RowID {}", region, a.row_id_bits));
  add("rat.data", StorageCell::DualPortSram, a.rat_entries, local, fmt::format("LocalRowID {}", local));
  // APT: a small CAM on the region id (IV-A3) with the region's registers beside it.
  add("apt.tags", StorageCell::Cam, a.apt_entries, 1 + region, fmt::format("valid 1 + region {}", region));
  add("apt.data", StorageCell::SinglePortSram, a.apt_entries, c.address_bits + (a.row_offset_bits + 1) + 2 * count + 1,
      fmt::format("Base {} + RowSize {} + capacity {} + RowPointer {} + spilled 1", c.address_bits,
                  a.row_offset_bits + 1, count, count));

  // RPM: fully associative partitions: a CAM tag per entry, data, validity mask, age timer.
  const uint64_t rpm_entries = uint64_t{r.partitions} * r.entries_per_peer;
  const uint32_t st_tag = c.address_bits > line_bits ? c.address_bits - line_bits : 1;
  const uint32_t row_line = a.row_offset_bits > line_bits ? a.row_offset_bits - line_bits : 1;
  const uint32_t rowsp_tag = 16 + region + a.row_id_bits + row_line;  // MallocID GPU 16 + region + RowID + line
  const uint32_t tag = std::max(st_tag, rowsp_tag);
  add("rpm.tags", StorageCell::Cam, rpm_entries, 3 + tag,
      fmt::format("valid 1 + st/rowsp 1 + nop 1 + max(line address {}, MallocID 16+{} + RowID {} + line {})", st_tag,
                  region, a.row_id_bits, row_line));
  add("rpm.data", StorageCell::SinglePortSram, rpm_entries, uint64_t{r.entry_bytes} * 8,
      fmt::format("{} B payload", r.entry_bytes));
  const uint64_t timer_cycles =
      r.timer_bypass == Time::zero() ? 0
                                     : static_cast<uint64_t>((static_cast<unsigned __int128>(r.timer_bypass.ps()) *
                                                                  r.clock.hertz() + 999999999999ULL) / 1000000000000ULL);
  const uint32_t age = timer_cycles == 0 ? 0 : index_bits(timer_cycles + 1);
  add("rpm.mask_age", StorageCell::SinglePortSram, rpm_entries, r.entry_bytes / r.mask_granule_bytes + age,
      fmt::format("mask {} + age {}", r.entry_bytes / r.mask_granule_bytes, age));

  // DAM: range CAM (two bounds per entry) plus the entry's group, threshold and row stride.
  const uint32_t group = index_bits(d.table_entries);
  add("dam.table_ranges", StorageCell::Cam, d.table_entries, 1 + 2 * uint64_t{c.address_bits},
      fmt::format("valid 1 + begin {} + end {}", c.address_bits, c.address_bits));
  add("dam.table_data", StorageCell::SinglePortSram, d.table_entries, group + d.counter_bits + 2 * (a.row_offset_bits + 1),
      fmt::format("group {} + threshold {} + row stride {} + counted bytes {}", group, d.counter_bits,
                  a.row_offset_bits + 1, a.row_offset_bits + 1));
  add("dam.counters", StorageCell::SinglePortSram, d.table_entries, d.counter_bits + 1,
      fmt::format("TB status counter {} + signalled 1 (one per group; groups <= entries)", d.counter_bits));
  add("dam.global", StorageCell::SinglePortSram, 1, 2 * uint64_t{d.global_counter_bits},
      fmt::format("global counter {} + expected total {}", d.global_counter_bits, d.global_counter_bits));

  const double bits_per_mm2 = c.area.sram_mbit_per_mm2 * 1e6;
  for (AreaItem& it : e.items) {
    const double factor = it.cell == StorageCell::DualPortSram ? c.area.dual_port_factor
                          : it.cell == StorageCell::Cam         ? c.area.cam_factor
                                                                 : 1.0;
    it.mm2 = static_cast<double>(it.bits()) * factor / bits_per_mm2;
    e.total_bits += it.bits();
    e.total_mm2 += it.mm2;
  }
  e.die_fraction = e.total_mm2 / c.area.gpu_die_mm2;
  return e;
}

nlohmann::json AreaEstimate::to_json() const {
  nlohmann::json items = nlohmann::json::array();
  for (const AreaItem& it : this->items) {
    items.push_back({{"structure", it.structure},
                     {"cell", storage_cell_name(it.cell)},
                     {"entries", it.entries},
                     {"bits_per_entry", it.bits_per_entry},
                     {"fields", it.fields},
                     {"bits", it.bits()},
                     {"mm2", it.mm2}});
  }
  return {{"technology_nm", technology_nm},
          {"sram_mbit_per_mm2", sram_mbit_per_mm2},
          {"structures", items},
          {"total_bits", total_bits},
          {"total_kib", static_cast<double>(total_bits) / 8.0 / 1024.0},
          {"total_mm2", total_mm2},
          {"die_fraction", die_fraction},
          {"paper", {{"total_mm2", kPaperHubAreaMm2},
                     {"technology_nm", kPaperHubAreaNodeNm},
                     {"source", "paper VI-E (storage and logic; TSMC 7 nm)"}}},
          {"scope", "storage arrays only; decode, routing and dispatcher logic are not modelled"}};
}

}  // namespace moehub
