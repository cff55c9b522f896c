#pragma once
// Allocation Pointer Table (paper IV-A3): per rowspMalloc region (MallocID) its base address,
// row size, capacity and the RowPointer, the next free LocalRowID. Registered by rowspMalloc
// through MMIO; RowPointer++ is the only allocation step, so rows are dense in arrival order.

#include <cstdint>
#include <optional>
#include <vector>

namespace moehub {

struct AptRegion {
  uint64_t base = 0;           // device address of LocalRowID 0
  uint64_t row_size = 0;       // bytes per row
  uint64_t capacity_rows = 0;  // rows the region holds
  uint64_t row_pointer = 0;    // next LocalRowID
  uint64_t spilled_rows = 0;   // RAT mappings of this region ever spilled (a miss must then check memory)
};

class AllocationPointerTable {
 public:
  explicit AllocationPointerTable(uint32_t entries);

  // Takes the lowest free entry; nullopt when every entry is live.
  std::optional<uint32_t> register_region(uint64_t base, uint64_t row_size, uint64_t capacity_rows);
  // nullptr for a free or out-of-range entry.
  const AptRegion* find(uint32_t region) const;
  AptRegion* find(uint32_t region);
  // RowPointer++; nullopt (and no change) when the region is full.
  std::optional<uint64_t> allocate(uint32_t region);
  // Re-initialisation: RowPointer back to 0. Freeing: the entry becomes free.
  void reset(uint32_t region);
  void release(uint32_t region);

  uint32_t entries() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t live() const;

 private:
  AptRegion& live_region(uint32_t region, const char* op);
  std::vector<std::optional<AptRegion>> slots_;
};

}  // namespace moehub
