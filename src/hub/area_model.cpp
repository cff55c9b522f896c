#include "hub/area_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

namespace moehub {

const char* storage_cell_name(StorageCell cell) {
  switch (cell) {
    case StorageCell::SinglePortSram: return "sram";
    case StorageCell::DualPortSram: return "sram-dual-port";
    case StorageCell::Cam: return "cam";
  }
  return "unknown";
}

const char* logic_cell_name(LogicCell cell) {
  switch (cell) {
    case LogicCell::Nand2: return "nand2";
    case LogicCell::Xor2: return "xor2";
    case LogicCell::Ao22: return "ao22";
    case LogicCell::HalfAdder: return "half_adder";
    case LogicCell::FullAdder: return "full_adder";
    case LogicCell::FlipFlop: return "flip_flop";
  }
  return "unknown";
}

uint32_t index_bits(uint64_t n) {
  uint32_t b = 1;
  while (b < 64 && (uint64_t{1} << b) < n) ++b;
  return b;
}

CellCounts& CellCounts::operator+=(const CellCounts& o) {
  for (size_t i = 0; i < kLogicCellKinds; ++i) n[i] += o.n[i];
  return *this;
}

CellCounts CellCounts::times(uint64_t k) const {
  CellCounts r;
  for (size_t i = 0; i < kLogicCellKinds; ++i) r.n[i] = n[i] * k;
  return r;
}

namespace gates {

CellCounts of(LogicCell cell, uint64_t count) {
  CellCounts c;
  c[cell] = count;
  return c;
}
CellCounts adder(uint64_t w) { return of(LogicCell::FullAdder, w); }
CellCounts comparator(uint64_t w) { return of(LogicCell::FullAdder, w); }
CellCounts equality(uint64_t w) {
  if (w == 0) return {};
  CellCounts c = of(LogicCell::Xor2, w);
  c += reduce(w);
  return c;
}
CellCounts incrementer(uint64_t w) { return of(LogicCell::HalfAdder, w); }
CellCounts reduce(uint64_t n) { return n <= 1 ? CellCounts{} : of(LogicCell::Nand2, n - 1); }
CellCounts decoder(uint64_t n) {
  if (n <= 1) return {};
  return of(LogicCell::Nand2, n * std::max<uint64_t>(1, index_bits(n) - 1));
}
CellCounts encoder(uint64_t n) {
  if (n <= 1) return {};
  return of(LogicCell::Nand2, uint64_t{index_bits(n)} * ((n + 1) / 2 - 1));
}
CellCounts priority_encoder(uint64_t n) {
  if (n <= 1) return {};
  CellCounts c = of(LogicCell::Nand2, 2 * n - 1);
  c += encoder(n);
  return c;
}
CellCounts mux(uint64_t n, uint64_t w) {
  if (n <= 1) return {};
  const uint64_t half = (n + 1) / 2;
  CellCounts c = of(LogicCell::Ao22, w * half);
  c += of(LogicCell::Nand2, w * (half - 1));
  return c;
}
CellCounts multiplier(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return {};
  CellCounts c = of(LogicCell::Nand2, a * b);
  c += of(LogicCell::FullAdder, (a - 1) * b);
  return c;
}
CellCounts min_tree(uint64_t n, uint64_t w) {
  if (n <= 1) return {};
  CellCounts stage = comparator(w);
  stage += mux(2, w + index_bits(n));
  return stage.times(n - 1);
}
CellCounts flops(uint64_t w) { return of(LogicCell::FlipFlop, w); }

}  // namespace gates

double cell_area_um2(const AreaConfig& a, LogicCell cell) {
  switch (cell) {
    case LogicCell::Nand2: return a.nand2_um2;
    case LogicCell::Xor2: return a.xor2_um2;
    case LogicCell::Ao22: return a.ao22_um2;
    case LogicCell::HalfAdder: return a.half_adder_um2;
    case LogicCell::FullAdder: return a.full_adder_um2;
    case LogicCell::FlipFlop: return a.flip_flop_um2;
  }
  return 0;
}

namespace {

// The MallocID's GPU part of an st.rowsp request (its region part is index_bits(apt.entries)).
constexpr uint32_t kMallocIdGpuBits = 16;

// Field widths shared by the storage and the logic count.
struct Widths {
  uint32_t region = 0;     // MallocID region field (the GPU part is implicit at the hub)
  uint32_t line = 0;       // byte offset within an RPM entry
  uint32_t local = 0;      // LocalRowID
  uint32_t count = 0;      // RowPointer and capacity reach 2^local
  uint32_t row_size = 0;   // RowSize (a row of 2^row_offset_bits bytes fits)
  uint32_t key = 0;        // RAT key: region + RowID
  uint32_t st_tag = 0;     // RPM tag of an st.: line address
  uint32_t row_line = 0;   // RPM tag of an st.rowsp: line within the row
  uint32_t tag = 0;        // RPM tag: the wider of the two
  uint32_t mask = 0;       // RPM validity bits per entry
  uint32_t age = 0;        // RPM age counter (0: no timer bypass)
  uint32_t header = 0;     // st.rowsp header: MallocID + RowID + RowOffset + .rowsp + .nop
  uint32_t header_extra = 0;  // header bits beyond a store's address
};

uint32_t age_bits(const RpmConfig& r) {
  if (r.timer_bypass == Time::zero()) return 0;
  const auto ps = static_cast<unsigned __int128>(r.timer_bypass.ps());
  const auto cycles = static_cast<uint64_t>((ps * r.clock.hertz() + 999999999999ULL) / 1000000000000ULL);
  return cycles == 0 ? 0 : index_bits(cycles + 1);
}

Widths widths_of(const HubConfig& c) {
  const AauConfig& a = c.aau;
  Widths w;
  w.region = index_bits(a.apt_entries);
  w.line = index_bits(c.rpm.entry_bytes);
  w.local = a.local_row_id_bits;
  w.count = w.local + 1;
  w.row_size = a.row_offset_bits + 1;
  w.key = w.region + a.row_id_bits;
  w.st_tag = c.address_bits > w.line ? c.address_bits - w.line : 1;
  w.row_line = a.row_offset_bits > w.line ? a.row_offset_bits - w.line : 1;
  w.tag = std::max(w.st_tag, kMallocIdGpuBits + w.region + a.row_id_bits + w.row_line);
  w.mask = c.rpm.entry_bytes / c.rpm.mask_granule_bytes;
  w.age = age_bits(c.rpm);
  w.header = kMallocIdGpuBits + w.region + a.row_id_bits + a.row_offset_bits + 2;
  w.header_extra = w.header > c.address_bits ? w.header - c.address_bits : 0;
  return w;
}

void price_storage(AreaEstimate& e, const AreaConfig& a) {
  const double bits_per_mm2 = a.sram_mbit_per_mm2 * 1e6;
  for (AreaItem& it : e.items) {
    const double factor = it.cell == StorageCell::DualPortSram ? a.dual_port_factor
                          : it.cell == StorageCell::Cam         ? a.cam_factor
                                                                 : 1.0;
    it.mm2 = static_cast<double>(it.bits()) * factor / bits_per_mm2;
    e.total_bits += it.bits();
    e.total_mm2 += it.mm2;
  }
}

void add_storage(AreaEstimate& e, const HubConfig& c, const Widths& w) {
  const AauConfig& a = c.aau;
  const RpmConfig& r = c.rpm;
  const DamConfig& d = c.dam;
  auto add = [&e](std::string name, StorageCell cell, uint64_t entries, uint64_t bits, std::string fields) {
    e.items.push_back(AreaItem{std::move(name), cell, entries, bits, std::move(fields)});
  };
  // RAT: the paper's 16-bank dual-port SRAM (VI-E).
  add("rat.tags", StorageCell::DualPortSram, a.rat_entries, 1 + w.key,
      fmt::format("valid 1 + region {} + RowID {}", w.region, a.row_id_bits));
  add("rat.data", StorageCell::DualPortSram, a.rat_entries, w.local, fmt::format("LocalRowID {}", w.local));
  // APT: a small CAM on the region id (IV-A3) with the region's registers beside it.
  add("apt.tags", StorageCell::Cam, a.apt_entries, 1 + w.region, fmt::format("valid 1 + region {}", w.region));
  add("apt.data", StorageCell::SinglePortSram, a.apt_entries, c.address_bits + w.row_size + 2 * w.count + 1,
      fmt::format("Base {} + RowSize {} + capacity {} + RowPointer {} + spilled 1", c.address_bits, w.row_size,
                  w.count, w.count));
  // RPM: fully associative partitions: a CAM tag per entry, data, validity mask, age timer.
  const uint64_t rpm_entries = uint64_t{r.partitions} * r.entries_per_peer;
  add("rpm.tags", StorageCell::Cam, rpm_entries, 3 + w.tag,
      fmt::format("valid 1 + st/rowsp 1 + nop 1 + max(line address {}, MallocID {}+{} + RowID {} + line {})", w.st_tag,
                  kMallocIdGpuBits, w.region, a.row_id_bits, w.row_line));
  add("rpm.data", StorageCell::SinglePortSram, rpm_entries, uint64_t{r.entry_bytes} * 8,
      fmt::format("{} B payload", r.entry_bytes));
  add("rpm.mask_age", StorageCell::SinglePortSram, rpm_entries, w.mask + w.age,
      fmt::format("mask {} + age {}", w.mask, w.age));
  // DAM: range CAM (two bounds per entry) plus the entry's group, threshold and row stride.
  const uint32_t group = index_bits(d.table_entries);
  add("dam.table_ranges", StorageCell::Cam, d.table_entries, 1 + 2 * uint64_t{c.address_bits},
      fmt::format("valid 1 + begin {} + end {}", c.address_bits, c.address_bits));
  add("dam.table_data", StorageCell::SinglePortSram, d.table_entries, group + d.counter_bits + 2 * w.row_size,
      fmt::format("group {} + threshold {} + row stride {} + counted bytes {}", group, d.counter_bits, w.row_size,
                  w.row_size));
  add("dam.counters", StorageCell::SinglePortSram, d.table_entries, d.counter_bits + 1,
      fmt::format("TB status counter {} + signalled 1 (one per group; groups <= entries)", d.counter_bits));
  add("dam.global", StorageCell::SinglePortSram, 1, 2 * uint64_t{d.global_counter_bits},
      fmt::format("global counter {} + expected total {}", d.global_counter_bits, d.global_counter_bits));
  price_storage(e, c.area);
}

using gates::adder, gates::comparator, gates::decoder, gates::encoder, gates::equality, gates::flops,
    gates::incrementer, gates::min_tree, gates::multiplier, gates::mux, gates::of, gates::priority_encoder,
    gates::reduce;

CellCounts sum(std::initializer_list<CellCounts> parts) {
  CellCounts c;
  for (const CellCounts& p : parts) c += p;
  return c;
}

void add_logic(AreaEstimate& e, std::string block, uint64_t copies, const CellCounts& one, std::string formula) {
  LogicItem it;
  it.block = std::move(block);
  it.copies = copies;
  it.formula = std::move(formula);
  it.cells = one.times(copies);
  e.logic.push_back(std::move(it));
}

// AAU: every RAT bank port is a lookup lane (as many requests per cycle as the banks serve);
// each lane hashes its key to a bank, crosses to it, compares the tag and computes the address.
// Row decoders and sense amplifiers sit in the SRAM macros, counted by their density.
void add_aau_logic(AreaEstimate& e, const HubConfig& c, const Widths& w) {
  const AauConfig& a = c.aau;
  const uint64_t lanes = uint64_t{a.rat_banks} * a.rat_ports_per_bank;
  const uint32_t bank_bits = a.rat_banks > 1 ? index_bits(a.rat_banks) : 0;
  const uint32_t hash = a.rat_banks > 1 ? w.key - bank_bits : 0;
  add_logic(e, "rat.bank_select", lanes, sum({of(LogicCell::Xor2, hash), decoder(a.rat_banks)}),
            fmt::format("hash {} XOR2 (key {} folded to {} bank bits) + decoder({})", hash, w.key, bank_bits,
                        a.rat_banks));
  const uint64_t request = w.key + w.local + 1;
  add_logic(e, "rat.crossbar", lanes, sum({mux(lanes, request), mux(lanes, w.local + 1)}),
            fmt::format("request mux({}, key {} + LocalRowID {} + write 1) + response mux({}, LocalRowID {} + hit 1)",
                        lanes, w.key, w.local, lanes, w.local));
  add_logic(e, "rat.tag_compare", lanes, sum({equality(w.key), of(LogicCell::Nand2, 1)}),
            fmt::format("equality({}) + valid AND", w.key));
  const uint32_t fifo = index_bits(a.rat_entries);
  add_logic(e, "rat.fifo", 1, sum({flops(2 * fifo), incrementer(fifo).times(2)}),
            fmt::format("head and tail: 2 x ({} FF + incrementer({}))", fifo, fifo));
  add_logic(e, "apt.match", 1,
            sum({flops(a.apt_entries), encoder(a.apt_entries), flops(w.region), incrementer(w.count),
                 comparator(w.count)}),
            fmt::format("match latch {} FF + encoder({}) + key {} FF + RowPointer incrementer({}) + capacity "
                        "comparator({})",
                        a.apt_entries, a.apt_entries, w.region, w.count, w.count));
  add_logic(e, "aau.address", lanes, sum({multiplier(w.local, w.row_size), adder(c.address_bits).times(2),
                                          flops(c.address_bits)}),
            fmt::format("Base + LocalRowID x RowSize + RowOffset: multiplier({}, {}) + 2 x adder({}) + {} FF", w.local,
                        w.row_size, c.address_bits, c.address_bits));
}

// RPM: per partition a CAM search (merge) and a free-entry pick (allocate), the mask merge, and
// a scheduler picking the eligible entry with the highest class and smallest (RowID, line).
void add_rpm_logic(AreaEstimate& e, const HubConfig& c, const Widths& w) {
  const RpmConfig& r = c.rpm;
  const uint64_t n = r.entries_per_peer;
  add_logic(e, "rpm.match", r.partitions, sum({flops(3 + w.tag), flops(n), encoder(n), priority_encoder(n)}),
            fmt::format("key {} FF + match latch {} FF + encoder({}) + free-entry priority_encoder({})", 3 + w.tag, n,
                        n, n));
  add_logic(e, "rpm.merge", r.partitions, sum({of(LogicCell::Nand2, w.mask), reduce(w.mask), flops(n)}),
            fmt::format("mask OR {} + full detect reduce({}) + full flag {} FF", w.mask, w.mask, n));
  const uint64_t sched_key = 1 + uint64_t{c.aau.row_id_bits} + w.row_line;
  add_logic(e, "rpm.scheduler", r.partitions, sum({of(LogicCell::Nand2, 3 * n), min_tree(n, sched_key)}),
            fmt::format("eligibility 3 x {} + min_tree({}, class 1 + RowID {} + line {})", n, n, c.aau.row_id_bits,
                        w.row_line));
  const uint64_t packet = uint64_t{r.entry_bytes} * 8 + w.mask + 3 + w.tag;
  add_logic(e, "rpm.egress", 1,
            sum({priority_encoder(r.partitions).times(2), flops(index_bits(r.partitions)), mux(r.partitions, packet)}),
            fmt::format("round-robin 2 x priority_encoder({}) + pointer {} FF + mux({}, payload {} + mask {} + tag {})",
                        r.partitions, index_bits(r.partitions), r.partitions, r.entry_bytes * 8, w.mask, 3 + w.tag));
  const uint64_t timers = w.age == 0 ? 0 : uint64_t{r.partitions} * n;
  add_logic(e, "rpm.timers", timers, sum({incrementer(w.age), equality(w.age)}),
            fmt::format("age incrementer({}) + bypass equality({})", w.age, w.age));
}

// DAM: every entry compares the acknowledged range with its bounds in parallel (a range match
// is arithmetic, not a binary CAM cell) and its group counter adds the counted bytes.
void add_dam_logic(AreaEstimate& e, const HubConfig& c, const Widths& w) {
  const DamConfig& d = c.dam;
  add_logic(e, "dam.range_match", d.table_entries,
            sum({comparator(c.address_bits).times(2), comparator(w.row_size), of(LogicCell::Nand2, 2)}),
            fmt::format("2 x comparator({}) + counted-part comparator({}) + 2 AND", c.address_bits, w.row_size));
  add_logic(e, "dam.ack_input", 1, sum({adder(c.address_bits), flops(c.address_bits + w.row_size)}),
            fmt::format("ack end adder({}) + register {} FF", c.address_bits, c.address_bits + w.row_size));
  add_logic(e, "dam.counters", d.table_entries, sum({adder(d.counter_bits), comparator(d.counter_bits)}),
            fmt::format("adder({}) + threshold comparator({})", d.counter_bits, d.counter_bits));
  add_logic(e, "dam.ready", 1,
            sum({priority_encoder(d.table_entries), adder(d.global_counter_bits), equality(d.global_counter_bits)}),
            fmt::format("Ready priority_encoder({}) + global adder({}) + AllReady equality({})", d.table_entries,
                        d.global_counter_bits, d.global_counter_bits));
}

// Outside the units: the st.rowsp header (wider than an address) through the hub-crossbar
// ports and out of each SM's load/store path, selected against a store's address by a flag.
void add_interface_logic(AreaEstimate& e, const HubConfig& c, const Widths& w) {
  const CellCounts port = sum({mux(2, w.header), flops(w.header_extra + 2)});
  const std::string formula = fmt::format("header select mux(2, {}) + {} FF (header beyond the {}-bit address + "
                                          ".rowsp, .nop flags)",
                                          w.header, w.header_extra + 2, c.address_bits);
  add_logic(e, "hub.xbar_ports", c.area.xbar_ports, port, formula);
  add_logic(e, "sm.rowsp_decode", c.area.sm_count, port, formula);
}

void price_logic(AreaEstimate& e, const AreaConfig& a) {
  for (LogicItem& it : e.logic) {
    for (size_t i = 0; i < kLogicCellKinds; ++i) {
      it.cell_um2 += static_cast<double>(it.cells.n[i]) * cell_area_um2(a, static_cast<LogicCell>(i));
    }
    it.nand2_eq = a.nand2_um2 > 0 ? it.cell_um2 / a.nand2_um2 : 0;
    it.mm2 = it.cell_um2 / a.logic_utilization / 1e6;
    e.logic_cells += it.cells;
    e.logic_cell_um2 += it.cell_um2;
    e.logic_nand2_eq += it.nand2_eq;
    e.logic_mm2 += it.mm2;
  }
}

}  // namespace

AreaEstimate estimate_area(const HubConfig& c) {
  const Widths w = widths_of(c);
  AreaEstimate e;
  e.technology_nm = c.area.technology_nm;
  e.sram_mbit_per_mm2 = c.area.sram_mbit_per_mm2;
  e.logic_utilization = c.area.logic_utilization;
  add_storage(e, c, w);
  e.die_fraction = e.total_mm2 / c.area.gpu_die_mm2;
  add_aau_logic(e, c, w);
  add_rpm_logic(e, c, w);
  add_dam_logic(e, c, w);
  add_interface_logic(e, c, w);
  price_logic(e, c.area);
  e.storage_and_logic_mm2 = e.total_mm2 + e.logic_mm2;
  e.storage_and_logic_die_fraction = e.storage_and_logic_mm2 / c.area.gpu_die_mm2;
  return e;
}

namespace {

// The one-to-many table of paper VII-A2 (replica_selector.h): a CAM on the logical MallocID, the
// entry's endpoints with its count and round-robin pointer, and one row counter per peer for the
// load-aware policy; the selection reads each endpoint's peer counter and takes the smallest.
void add_replica_table(AreaEstimate& e, const HubConfig& c, const Widths& w, uint32_t gpus) {
  const ReplicaTableConfig& r = c.replica;
  const uint32_t id = kMallocIdGpuBits + w.region, idx = index_bits(r.max_replicas), peer = index_bits(gpus);
  e.items.push_back(AreaItem{"replica.tags", StorageCell::Cam, r.entries, 1 + id,
                             fmt::format("valid 1 + logical MallocID {}", id)});
  e.items.push_back(AreaItem{"replica.data", StorageCell::SinglePortSram, r.entries,
                             uint64_t{r.max_replicas} * id + 2 * idx,
                             fmt::format("{} x endpoint MallocID {} + count {} + round-robin pointer {}", r.max_replicas,
                                         id, idx, idx)});
  e.items.push_back(AreaItem{"replica.peer_counters", StorageCell::SinglePortSram, gpus, r.counter_bits,
                             fmt::format("rows sent to the peer {}", r.counter_bits)});
  price_storage(e, c.area);
  add_logic(e, "replica.match", 1, sum({flops(r.entries), encoder(r.entries), flops(id)}),
            fmt::format("match latch {} FF + encoder({}) + key {} FF", r.entries, r.entries, id));
  add_logic(e, "replica.select", 1,
            sum({mux(r.max_replicas, id), incrementer(idx), mux(gpus, r.counter_bits).times(r.max_replicas),
                 min_tree(r.max_replicas, r.counter_bits), decoder(gpus), incrementer(r.counter_bits)}),
            fmt::format("endpoint mux({}, {}) + pointer incrementer({}) + {} x counter mux({}, {}) + min_tree({}, {}) "
                        "+ counter update decoder({}) + incrementer({}) (peer index {} bits)",
                        r.max_replicas, id, idx, r.max_replicas, gpus, r.counter_bits, r.max_replicas, r.counter_bits,
                        gpus, r.counter_bits, peer));
  price_logic(e, c.area);
}

}  // namespace

AreaEstimate estimate_replica_table_area(const HubConfig& config, uint32_t gpus) {
  AreaEstimate e;
  e.technology_nm = config.area.technology_nm;
  e.sram_mbit_per_mm2 = config.area.sram_mbit_per_mm2;
  e.logic_utilization = config.area.logic_utilization;
  add_replica_table(e, config, widths_of(config), gpus);
  e.die_fraction = e.total_mm2 / config.area.gpu_die_mm2;
  e.storage_and_logic_mm2 = e.total_mm2 + e.logic_mm2;
  e.storage_and_logic_die_fraction = e.storage_and_logic_mm2 / config.area.gpu_die_mm2;
  return e;
}

namespace {

nlohmann::json cells_json(const CellCounts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < kLogicCellKinds; ++i) j[logic_cell_name(static_cast<LogicCell>(i))] = c.n[i];
  return j;
}

nlohmann::json logic_json(const std::vector<LogicItem>& logic) {
  nlohmann::json items = nlohmann::json::array();
  for (const LogicItem& it : logic) {
    items.push_back({{"block", it.block},
                     {"copies", it.copies},
                     {"formula", it.formula},
                     {"cells", cells_json(it.cells)},
                     {"cell_um2", it.cell_um2},
                     {"nand2_eq", it.nand2_eq},
                     {"mm2", it.mm2}});
  }
  return items;
}

}  // namespace

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
          {"storage_mm2", total_mm2},
          {"logic", logic_json(logic)},
          {"logic_cells", cells_json(logic_cells)},
          {"logic_cell_um2", logic_cell_um2},
          {"logic_nand2_eq", logic_nand2_eq},
          {"logic_utilization", logic_utilization},
          {"logic_mm2", logic_mm2},
          {"storage_and_logic_mm2", storage_and_logic_mm2},
          {"storage_and_logic_die_fraction", storage_and_logic_die_fraction},
          {"paper", {{"total_mm2", kPaperHubAreaMm2},
                     {"technology_nm", kPaperHubAreaNodeNm},
                     {"source", "paper VI-E (storage and logic; TSMC 7 nm)"}}},
          {"scope", "structures, total_mm2 and die_fraction: storage arrays only; logic and logic_mm2: the gates and "
                    "flip-flops around them (docs/hub.md 5); storage_and_logic_mm2: both"}};
}

}  // namespace moehub
