#pragma once
// Address Allocation Unit (paper IV-A3): at the consumer's hub, turns an arriving st.rowsp's
// (MallocID, RowID, RowOffset) into a device address. RAT hit: reuse the LocalRowID. Miss:
// allocate RowPointer++ from the APT, or, for a mapping spilled earlier, restore it from device
// memory. Address = Base + LocalRowID x RowSize + RowOffset. Local rows take the same path.
//
// Timing (hub cycles): a lookup books one access in its RAT bank (bank conflicts serialise) and
// takes rat_lookup_cycles; an allocation adds apt_cycles; the fill books another access. Once a
// region has spilled a mapping, a miss must read the spill area to learn whether the row was
// allocated before (a memory read through `MemoryAccess`); packets of the same row arriving
// meanwhile wait for that read, so every packet of a row gets the same LocalRowID. Evictions
// write the mapping to the spill area (a memory write, off the packet's critical path).

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hub/allocation_pointer_table.h"
#include "hub/hub_counters.h"
#include "hub/hub_clock.h"
#include "hub/hub_config.h"
#include "hub/row_allocation_table.h"
#include "hub/rowsp.h"
#include "sim/callback.h"
#include "sim/simulator.h"

namespace moehub {

enum class MemoryOp { Read, Write };
// Device-memory traffic of the spill area, served by the GPU's memory model: `bytes` read or
// written, then `done` runs (at the time the access completes).
using MemoryAccess = std::function<void(MemoryOp op, uint64_t bytes, Callback done)>;

enum class PlacementStatus { Placed, RegionOverflow };

struct Placement {
  PlacementStatus status = PlacementStatus::Placed;
  uint64_t local_row_id = 0;
  uint64_t address = 0;   // Base + LocalRowID * RowSize + RowOffset
  bool restored = false;  // the mapping came back from the spill area
};

using PlacementCallback = UniqueFunction<void(const Placement&)>;

class AddressAllocationUnit {
 public:
  AddressAllocationUnit(Simulator& sim, const AauConfig& config, uint32_t gpu, MemoryAccess memory);

  // rowspMalloc's MMIO registration; returns the region id (APT entry) for the MallocID.
  // RowspError: RegionTableFull, BadRegion.
  uint32_t register_region(uint64_t base, uint64_t row_size, uint64_t capacity_rows);
  // Flushes the region's RAT entries and spilled mappings (paper: "only when the region is
  // freed or reinitialized"). std::logic_error while a miss of the region is outstanding.
  void free_region(uint32_t region);
  void reinit_region(uint32_t region);

  // A st.rowsp write (remote or local) reaching this hub; `done` runs when its address is known.
  // RowspError: UnknownRegion, OffsetBeyondRow, RowIdTooWide. A region overflow is not thrown
  // here: the write is dropped (never placed over another row), `done` gets RegionOverflow, the
  // statistic counts it and failed() turns true; throw_if_failed() raises it as a RowspError.
  void arrive(const RowspStore& write, PlacementCallback done);

  bool failed() const { return !first_failure_.empty(); }
  void throw_if_failed() const;

  const AllocationPointerTable& apt() const { return apt_; }
  const RowAllocationTable& rat() const { return rat_; }
  uint32_t gpu() const { return gpu_; }

  uint64_t rat_hits() const { return n_.rat_hits; }
  uint64_t rat_misses() const { return n_.rat_misses; }
  uint64_t rat_evictions() const { return n_.rat_evictions; }
  uint64_t rat_restores() const { return n_.rat_restores; }
  uint64_t region_overflows() const { return n_.region_overflow_writes; }
  AauCounters counters() const;

 private:
  struct Waiter {
    uint64_t row_offset;
    PlacementCallback done;
  };

  void validate(const RowspStore& w, const AptRegion*& region) const;
  // Allocates or restores `key`'s mapping, inserts it (spilling a victim) and answers `waiters`
  // at cycle `ready_cycle` (+ APT cycles when allocating).
  void resolve_miss(const RatKey& key, uint64_t earliest_cycle, bool check_spill, std::vector<Waiter> waiters);
  void complete(const RatKey& key, const Placement& row, uint64_t at_cycle, std::vector<Waiter> waiters);
  // Answers one waiter at `at` through a batch of answers: the event captures the batch's index,
  // not a placement and a callback (which would not fit a callback's inline storage).
  void answer_at(Time at, const Placement& p, PlacementCallback done);
  void flush(uint32_t region);

  Simulator& sim_;
  AauConfig cfg_;
  HubClock clock_;
  uint32_t gpu_;
  MemoryAccess memory_;
  AllocationPointerTable apt_;
  RowAllocationTable rat_;
  // The spill area in device memory: mappings evicted from the RAT.
  std::unordered_map<RatKey, uint64_t, RatKeyHash> spilled_;
  // Misses waiting for the spill-area read, with the packets of the same row that joined them.
  std::unordered_map<RatKey, std::vector<Waiter>, RatKeyHash> pending_;
  std::string first_failure_;
  struct Answer {
    Placement placement;
    PlacementCallback done;
  };
  // Answers due in the same cycle as the one asked just before share its event (most stores of
  // a burst hit the RAT one after another), and are given in the order they were asked.
  std::vector<std::vector<Answer>> batches_;
  std::vector<uint32_t> free_batches_;
  std::vector<Answer> running_;  // the batch being answered (its answers may ask again)
  uint32_t open_batch_ = UINT32_MAX;  // the batch the next answer may join, while its event is pending
  Time open_at_;

  AauCounters n_;  // rat_bank_conflict_cycles is the RAT's, filled in by counters()
};

}  // namespace moehub
