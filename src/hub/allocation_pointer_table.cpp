#include "hub/allocation_pointer_table.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

AllocationPointerTable::AllocationPointerTable(uint32_t entries) : slots_(entries) {
  if (entries == 0) throw std::logic_error("AllocationPointerTable: zero entries");
}

std::optional<uint32_t> AllocationPointerTable::register_region(uint64_t base, uint64_t row_size,
                                                                uint64_t capacity_rows) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]) {
      slots_[i] = AptRegion{base, row_size, capacity_rows, 0, 0};
      return i;
    }
  }
  return std::nullopt;
}

const AptRegion* AllocationPointerTable::find(uint32_t region) const {
  return region < slots_.size() && slots_[region] ? &*slots_[region] : nullptr;
}

AptRegion* AllocationPointerTable::find(uint32_t region) {
  return region < slots_.size() && slots_[region] ? &*slots_[region] : nullptr;
}

AptRegion& AllocationPointerTable::live_region(uint32_t region, const char* op) {
  AptRegion* r = find(region);
  if (!r) throw std::logic_error(fmt::format("AllocationPointerTable::{}: region {} is not live", op, region));
  return *r;
}

std::optional<uint64_t> AllocationPointerTable::allocate(uint32_t region) {
  AptRegion& r = live_region(region, "allocate");
  if (r.row_pointer >= r.capacity_rows) return std::nullopt;
  return r.row_pointer++;
}

void AllocationPointerTable::reset(uint32_t region) {
  AptRegion& r = live_region(region, "reset");
  r.row_pointer = 0;
  r.spilled_rows = 0;
}

void AllocationPointerTable::release(uint32_t region) {
  live_region(region, "release");
  slots_[region].reset();
}

uint32_t AllocationPointerTable::live() const {
  uint32_t n = 0;
  for (const auto& s : slots_) n += s.has_value();
  return n;
}

}  // namespace moehub
