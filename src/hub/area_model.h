#pragma once
// Storage of every MoE-Hub structure, in bits, from the hub configuration, and an area estimate
// from a documented SRAM density (hub.area.*). Only storage is counted: decode, routing and
// dispatcher-trigger logic (which the paper's 0.49 mm^2 also includes) are not modelled.

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

struct AreaEstimate {
  uint32_t technology_nm = 0;
  double sram_mbit_per_mm2 = 0;
  std::vector<AreaItem> items;
  uint64_t total_bits = 0;
  double total_mm2 = 0;
  double die_fraction = 0;  // total_mm2 / hub.area.gpu_die_mm2

  nlohmann::json to_json() const;
};

// ceil(log2(n)) with a floor of 1 bit: the width of an index over n things.
uint32_t index_bits(uint64_t n);

AreaEstimate estimate_area(const HubConfig& config);

}  // namespace moehub
