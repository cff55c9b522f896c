#include "hub/rowsp_registry.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

RowspRegistry::RowspRegistry(uint32_t gpu_count) : hubs_(gpu_count, nullptr) {
  if (gpu_count == 0 || gpu_count > MallocId::kMaxGpus) {
    throw std::logic_error(fmt::format("RowspRegistry: {} GPUs cannot be encoded in a MallocID", gpu_count));
  }
}

void RowspRegistry::attach(uint32_t gpu, AddressAllocationUnit& aau) {
  if (gpu >= hubs_.size() || aau.gpu() != gpu) throw std::logic_error("RowspRegistry::attach: GPU index mismatch");
  hubs_[gpu] = &aau;
}

MallocId RowspRegistry::rowsp_malloc(uint32_t target_gpu, uint64_t base, uint64_t row_size, uint64_t capacity_rows) {
  if (target_gpu >= hubs_.size() || !hubs_[target_gpu]) {
    throw RowspError(RowspErrorKind::UnknownGpu, "rowspMalloc",
                     fmt::format("target GPU {} does not exist (GPUs 0 to {})", target_gpu, hubs_.size() - 1));
  }
  const uint32_t region = hubs_[target_gpu]->register_region(base, row_size, capacity_rows);
  return MallocId::encode(target_gpu, region);
}

AddressAllocationUnit& RowspRegistry::hub_of(MallocId id) const {
  if (id.gpu() >= hubs_.size() || !hubs_[id.gpu()]) {
    throw RowspError(RowspErrorKind::UnknownGpu, fmt::format("MallocID {:#x}", id.bits()),
                     fmt::format("names GPU {}, which does not exist (GPUs 0 to {})", id.gpu(), hubs_.size() - 1));
  }
  AddressAllocationUnit& hub = *hubs_[id.gpu()];
  if (!hub.apt().find(id.region())) {
    throw RowspError(RowspErrorKind::UnknownRegion, fmt::format("MallocID {:#x}", id.bits()),
                     fmt::format("names no live rowspMalloc region on GPU {}", id.gpu()));
  }
  return hub;
}

void RowspRegistry::rowsp_free(MallocId id) { hub_of(id).free_region(id.region()); }

void RowspRegistry::rowsp_reinit(MallocId id) { hub_of(id).reinit_region(id.region()); }

uint32_t RowspRegistry::resolve_gpu(MallocId id) const { return hub_of(id).gpu(); }

uint32_t RowspRegistry::resolve(const RowspStore& s) const {
  const AddressAllocationUnit& hub = hub_of(s.malloc_id);
  const AptRegion& region = *hub.apt().find(s.malloc_id.region());
  if (s.row_offset > region.row_size || s.bytes > region.row_size - s.row_offset) {
    throw RowspError(RowspErrorKind::OffsetBeyondRow, fmt::format("MallocID {:#x}", s.malloc_id.bits()),
                     fmt::format("RowOffset {} + {} B lies beyond the row of {} B", s.row_offset, s.bytes,
                                 region.row_size));
  }
  return hub.gpu();
}

}  // namespace moehub
