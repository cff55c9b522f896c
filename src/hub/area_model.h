#pragma once
// Area of every MoE-Hub structure from the hub configuration, in two parts:
//  - storage: bits of each table times a documented SRAM/CAM density (hub.area.*);
//  - logic: the gates and flip-flops around the tables (CAM match and priority logic, RAT bank
//    selection and tag compare, the RPM scheduler and merge datapath, DAM comparators and
//    counters, the hub-crossbar ports, the SMs' st.rowsp decode path), counted per block from
//    the configured sizes with a stated formula, times measured 7 nm standard-cell areas and
//    divided by a placement utilization. docs/hub/area.md section 5 gives every formula.

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hub/hub_config.h"

namespace moehub {

// The paper's own figure, shown beside the estimate and never used to compute it (paper VI-E:
// "all hardware support occupies just 0.49 mm^2", TSMC 7 nm).
inline constexpr double kPaperHubAreaMm2 = 0.49;
inline constexpr uint32_t kPaperHubAreaNodeNm = 7;

enum class StorageCell { SinglePortSram, DualPortSram, Cam };
const char* storage_cell_name(StorageCell cell);

struct AreaItem {
  std::string structure;   // e.g. "rat.tags"
  StorageCell cell = StorageCell::SinglePortSram;
  uint64_t entries = 0;
  uint64_t bits_per_entry = 0;
  std::string fields;      // how bits_per_entry adds up
  uint64_t bits() const { return entries * bits_per_entry; }
  double mm2 = 0;
};

// The standard cells the logic is counted in; each has an area hub.area.<name>_um2.
enum class LogicCell { Nand2, Xor2, Ao22, HalfAdder, FullAdder, FlipFlop };
inline constexpr size_t kLogicCellKinds = 6;
const char* logic_cell_name(LogicCell cell);

struct CellCounts {
  std::array<uint64_t, kLogicCellKinds> n{};
  uint64_t& operator[](LogicCell c) { return n[static_cast<size_t>(c)]; }
  uint64_t operator[](LogicCell c) const { return n[static_cast<size_t>(c)]; }
  CellCounts& operator+=(const CellCounts& o);
  CellCounts times(uint64_t k) const;
  bool operator==(const CellCounts&) const = default;
};

// Building blocks of the logic count (each formula in docs/hub/area.md 5.2). Widths in bits.
namespace gates {
CellCounts of(LogicCell cell, uint64_t count);
CellCounts adder(uint64_t w);               // ripple carry: w full adders
CellCounts comparator(uint64_t w);          // a < b: a subtractor's carry chain, w full adders
CellCounts equality(uint64_t w);            // w XOR2 + an AND tree of w inputs (w - 1 NAND2)
CellCounts incrementer(uint64_t w);         // w half adders
CellCounts reduce(uint64_t n);              // an n-input AND/OR tree: n - 1 NAND2
CellCounts decoder(uint64_t n);             // index -> one of n: n AND gates of index_bits(n) inputs
CellCounts encoder(uint64_t n);             // one of n -> index: index_bits(n) ORs of ceil(n/2) inputs
CellCounts priority_encoder(uint64_t n);    // first set of n (prefix OR + inhibit: 2n - 1) + encoder
CellCounts mux(uint64_t n, uint64_t w);     // one-hot n:1 of w bits: ceil(n/2) AO22 + OR tree per bit
CellCounts multiplier(uint64_t a, uint64_t b);  // array: a*b partial products + (a-1)*b full adders
CellCounts min_tree(uint64_t n, uint64_t w);    // smallest of n keys: n - 1 comparators + 2:1 muxes
CellCounts flops(uint64_t w);               // w flip-flops
}  // namespace gates

struct LogicItem {
  std::string block;     // e.g. "rat.tag_compare"
  uint64_t copies = 0;   // instances: lanes, partitions, entries, SMs
  std::string formula;   // what one instance holds
  CellCounts cells;      // all instances together
  double cell_um2 = 0;   // sum of the cells' areas
  double nand2_eq = 0;   // cell_um2 over the NAND2 area
  double mm2 = 0;        // cell_um2 / placement utilization
};

struct AreaEstimate {
  uint32_t technology_nm = 0;
  double sram_mbit_per_mm2 = 0;
  std::vector<AreaItem> items;
  uint64_t total_bits = 0;
  double total_mm2 = 0;     // storage only (the name predates the logic estimate)
  double die_fraction = 0;  // total_mm2 / hub.area.gpu_die_mm2

  double logic_utilization = 0;
  std::vector<LogicItem> logic;
  CellCounts logic_cells;
  double logic_cell_um2 = 0;
  double logic_nand2_eq = 0;
  double logic_mm2 = 0;
  double storage_and_logic_mm2 = 0;
  double storage_and_logic_die_fraction = 0;

  nlohmann::json to_json() const;
};

// ceil(log2(n)) with a floor of 1 bit: the width of an index over n things.
uint32_t index_bits(uint64_t n);

double cell_area_um2(const AreaConfig& area, LogicCell cell);

AreaEstimate estimate_area(const HubConfig& config);
// The one-to-many replica table (paper VII-A2, hub.apt.replica_*) of one hub serving `gpus`
// peers: counted apart from estimate_area, which describes the paper's hub (docs/hub/section-vii.md 8).
AreaEstimate estimate_replica_table_area(const HubConfig& config, uint32_t gpus);

}  // namespace moehub
