#include "hub/address_allocation_unit.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

AddressAllocationUnit::AddressAllocationUnit(Simulator& sim, const AauConfig& config, uint32_t gpu,
                                             MemoryAccess memory)
    : sim_(sim),
      cfg_(config),
      clock_(config.clock),
      gpu_(gpu),
      memory_(std::move(memory)),
      apt_(config.apt_entries),
      rat_(config.rat_entries, config.rat_banks, config.rat_ports_per_bank) {
  if (!memory_) throw std::logic_error("AddressAllocationUnit: no memory access callback");
}

uint32_t AddressAllocationUnit::register_region(uint64_t base, uint64_t row_size, uint64_t capacity_rows) {
  if (row_size == 0 || capacity_rows == 0) {
    throw RowspError(RowspErrorKind::BadRegion, "rowspMalloc",
                     fmt::format("row size {} B and capacity {} rows must both be positive", row_size, capacity_rows));
  }
  if (cfg_.local_row_id_bits < 64 && capacity_rows > (uint64_t{1} << cfg_.local_row_id_bits)) {
    throw RowspError(RowspErrorKind::BadRegion, "rowspMalloc",
                     fmt::format("capacity of {} rows exceeds the {}-bit LocalRowID (hub.rat.local_row_id_bits)",
                                 capacity_rows, cfg_.local_row_id_bits));
  }
  if (cfg_.row_offset_bits < 64 && row_size > (uint64_t{1} << cfg_.row_offset_bits)) {
    throw RowspError(RowspErrorKind::BadRegion, "rowspMalloc",
                     fmt::format("row size of {} B exceeds the {}-bit RowOffset (hub.rat.row_offset_bits)", row_size,
                                 cfg_.row_offset_bits));
  }
  const auto region = apt_.register_region(base, row_size, capacity_rows);
  if (!region) {
    throw RowspError(RowspErrorKind::RegionTableFull, "hub.apt.entries",
                     fmt::format("all {} APT entries of GPU {} hold live regions", apt_.entries(), gpu_));
  }
  return *region;
}

void AddressAllocationUnit::flush(uint32_t region) {
  for (const auto& [key, waiters] : pending_) {
    if (key.region == region) {
      throw std::logic_error(fmt::format("AAU: region {} of GPU {} flushed while a miss is outstanding", region, gpu_));
    }
  }
  rat_.flush_region(region);
  std::erase_if(spilled_, [region](const auto& kv) { return kv.first.region == region; });
}

void AddressAllocationUnit::free_region(uint32_t region) {
  if (!apt_.find(region)) throw std::logic_error(fmt::format("AAU: free of region {} that is not live", region));
  flush(region);
  apt_.release(region);
}

void AddressAllocationUnit::reinit_region(uint32_t region) {
  if (!apt_.find(region)) throw std::logic_error(fmt::format("AAU: re-init of region {} that is not live", region));
  flush(region);
  apt_.reset(region);
}

void AddressAllocationUnit::validate(const RowspStore& w, const AptRegion*& region) const {
  if (w.malloc_id.gpu() != gpu_) {
    throw std::logic_error(fmt::format("AAU of GPU {} received a write for MallocID {:#x} (GPU {})", gpu_,
                                       w.malloc_id.bits(), w.malloc_id.gpu()));
  }
  if (w.bytes == 0) throw std::logic_error("AAU: a write of zero bytes");
  region = apt_.find(w.malloc_id.region());
  if (!region) {
    throw RowspError(RowspErrorKind::UnknownRegion, fmt::format("MallocID {:#x}", w.malloc_id.bits()),
                     fmt::format("names no live rowspMalloc region on GPU {}", gpu_));
  }
  if (cfg_.row_id_bits < 64 && (w.row_id >> cfg_.row_id_bits) != 0) {
    throw RowspError(RowspErrorKind::RowIdTooWide, "hub.rat.row_id_bits",
                     fmt::format("RowID {} does not fit {} bits", w.row_id, cfg_.row_id_bits));
  }
  if (w.row_offset > region->row_size || w.bytes > region->row_size - w.row_offset) {
    throw RowspError(RowspErrorKind::OffsetBeyondRow, fmt::format("MallocID {:#x}", w.malloc_id.bits()),
                     fmt::format("RowOffset {} + {} B lies beyond the row of {} B", w.row_offset, w.bytes,
                                 region->row_size));
  }
}

void AddressAllocationUnit::arrive(const RowspStore& w, PlacementCallback done) {
  const AptRegion* region = nullptr;
  validate(w, region);
  const RatKey key{w.malloc_id.region(), w.row_id};
  const uint64_t current = clock_.cycle_at_or_after(sim_.now());
  const uint64_t slot = rat_.reserve_access(key, current, current);
  const uint64_t looked_up = slot + cfg_.rat_lookup_cycles;

  if (auto it = pending_.find(key); it != pending_.end()) {
    ++n_.rat_pending_joins;
    it->second.push_back(Waiter{w.row_offset, std::move(done)});
    return;
  }
  if (const auto local = rat_.lookup(key)) {
    ++n_.rat_hits;
    const AptRegion* r = apt_.find(key.region);
    answer_at(clock_.time_of(looked_up),
              Placement{PlacementStatus::Placed, *local, r->base + *local * r->row_size + w.row_offset, false},
              std::move(done));
    return;
  }
  ++n_.rat_misses;
  std::vector<Waiter> waiters;
  waiters.push_back(Waiter{w.row_offset, std::move(done)});
  if (region->spilled_rows == 0) {
    // Nothing of this region was ever spilled: the row is new, allocate without asking memory.
    resolve_miss(key, looked_up, false, std::move(waiters));
    return;
  }
  ++n_.rat_spill_checks;
  n_.spill_read_bytes += cfg_.spill_entry_bytes;
  pending_.emplace(key, std::move(waiters));
  sim_.schedule_at(clock_.time_of(looked_up), [this, key] {
    memory_(MemoryOp::Read, cfg_.spill_entry_bytes, [this, key] {
      auto node = pending_.extract(key);
      resolve_miss(key, clock_.cycle_at_or_after(sim_.now()) + cfg_.rat_lookup_cycles, true, std::move(node.mapped()));
    });
  });
}

void AddressAllocationUnit::resolve_miss(const RatKey& key, uint64_t cycle, bool check_spill,
                                         std::vector<Waiter> waiters) {
  AptRegion* region = apt_.find(key.region);
  if (!region) throw std::logic_error("AAU: miss resolved for a region that is no longer live");
  Placement row;
  const auto spilled = check_spill ? spilled_.find(key) : spilled_.end();
  if (spilled != spilled_.end()) {
    ++n_.rat_restores;
    row.local_row_id = spilled->second;
    row.restored = true;
  } else {
    cycle += cfg_.apt_cycles;
    const auto local = apt_.allocate(key.region);
    if (!local) {
      n_.region_overflow_writes += waiters.size();
      if (first_failure_.empty()) {
        first_failure_ = fmt::format("region {} of GPU {} overflowed its capacity of {} rows at RowID {}",
                                     key.region, gpu_, region->capacity_rows, key.row_id);
      }
      complete(key, Placement{PlacementStatus::RegionOverflow, 0, 0, false}, cycle, std::move(waiters));
      return;
    }
    ++n_.rows_allocated;
    row.local_row_id = *local;
  }
  rat_.reserve_access(key, cycle, clock_.cycle_at_or_after(sim_.now()));  // the fill
  if (const auto victim = rat_.insert(key, row.local_row_id)) {
    ++n_.rat_evictions;
    spilled_[victim->key] = victim->local_row_id;
    if (AptRegion* r = apt_.find(victim->key.region)) ++r->spilled_rows;
    n_.spill_write_bytes += cfg_.spill_entry_bytes;
    memory_(MemoryOp::Write, cfg_.spill_entry_bytes, [] {});
  }
  complete(key, row, cycle, std::move(waiters));
}

void AddressAllocationUnit::complete(const RatKey& key, const Placement& row, uint64_t at_cycle,
                                     std::vector<Waiter> waiters) {
  const AptRegion* region = apt_.find(key.region);
  const Time at = clock_.time_of(at_cycle);
  for (Waiter& w : waiters) {
    Placement p = row;
    if (p.status == PlacementStatus::Placed) p.address = region->base + p.local_row_id * region->row_size + w.row_offset;
    answer_at(at, p, std::move(w.done));
  }
}

void AddressAllocationUnit::answer_at(Time at, const Placement& p, PlacementCallback done) {
  if (open_batch_ != UINT32_MAX && open_at_ == at) {
    batches_[open_batch_].push_back(Answer{p, std::move(done)});
    return;
  }
  uint32_t id;
  if (free_batches_.empty()) {
    id = static_cast<uint32_t>(batches_.size());
    batches_.emplace_back();
  } else {
    id = free_batches_.back();
    free_batches_.pop_back();
  }
  batches_[id].push_back(Answer{p, std::move(done)});
  open_batch_ = id;
  open_at_ = at;
  sim_.schedule_at(at, [this, id] {
    if (open_batch_ == id) open_batch_ = UINT32_MAX;
    std::vector<Answer> run;
    run.swap(running_);
    run.swap(batches_[id]);  // the batch's slot keeps the scratch's capacity
    free_batches_.push_back(id);
    for (Answer& a : run) a.done(a.placement);
    run.clear();
    running_.swap(run);
  });
}

void AddressAllocationUnit::throw_if_failed() const {
  if (failed()) throw RowspError(RowspErrorKind::RegionOverflow, fmt::format("rowspMalloc on GPU {}", gpu_), first_failure_);
}

AauCounters AddressAllocationUnit::counters() const {
  AauCounters c = n_;
  c.rat_bank_conflict_cycles = rat_.bank_conflict_cycles();
  return c;
}

}  // namespace moehub
