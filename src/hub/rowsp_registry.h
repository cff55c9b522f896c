#pragma once
// rowspMalloc and its companions (paper IV-A2): the runtime's view of every GPU's regions.
// rowspMalloc registers Base and RowSize in the target GPU's hub (its APT, by MMIO) and returns
// a MallocID naming the target GPU and the region. At the producer, resolve() stands for the
// L1-TLB step that turns a MallocID into the peer GPU the store is routed to.

#include <cstdint>
#include <vector>

#include "hub/address_allocation_unit.h"
#include "hub/rowsp.h"

namespace moehub {

class RowspRegistry {
 public:
  explicit RowspRegistry(uint32_t gpu_count);

  // Connects GPU `gpu`'s hub; each GPU's AAU must be attached before regions are made on it.
  void attach(uint32_t gpu, AddressAllocationUnit& aau);

  // RowspError: UnknownGpu (no such GPU or none attached), RegionTableFull, BadRegion.
  MallocId rowsp_malloc(uint32_t target_gpu, uint64_t base, uint64_t row_size, uint64_t capacity_rows);
  // Flush the target hub's RAT/APT state of the region (freed: the MallocID dies; re-initialised:
  // RowPointer back to 0 for the next layer). RowspError: UnknownGpu, UnknownRegion.
  void rowsp_free(MallocId id);
  void rowsp_reinit(MallocId id);

  // Producer-side routing of a MallocID. RowspError: UnknownGpu, UnknownRegion.
  uint32_t resolve_gpu(MallocId id) const;
  // Routing plus the checks the runtime can make before the store leaves: RowOffset + bytes
  // within the row. RowspError: UnknownGpu, UnknownRegion, OffsetBeyondRow.
  uint32_t resolve(const RowspStore& store) const;

  uint32_t gpu_count() const { return static_cast<uint32_t>(hubs_.size()); }

 private:
  AddressAllocationUnit& hub_of(MallocId id) const;

  std::vector<AddressAllocationUnit*> hubs_;
};

}  // namespace moehub
