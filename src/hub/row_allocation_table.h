#pragma once
// Row Allocation Table (paper IV-A3): a tag RAM caching (MallocID, RowID) -> LocalRowID for the
// rows whose packets are still arriving. When it is full, inserting evicts the oldest mapping
// (first in, first out, paper "Eviction Mechanism"); the caller spills it to device memory.
//
// Capacity is table-wide (the paper evicts "when the RAT table is full"); banks only limit
// throughput: a mapping lives in bank hash(key) % banks, and each bank serves
// `ports_per_bank` accesses per cycle, so same-cycle accesses to one bank serialise.

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "hub/rat_map.h"

namespace moehub {

struct RatKey {
  uint32_t region = 0;  // MallocID region (the GPU part is this hub's own)
  uint64_t row_id = 0;
  bool operator==(const RatKey&) const = default;
};

struct RatKeyHash {
  size_t operator()(const RatKey& k) const {
    uint64_t x = k.row_id * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(k.region) << 1);
    x ^= x >> 29;
    return static_cast<size_t>(x);
  }
};

struct RatEviction {
  RatKey key;
  uint64_t local_row_id = 0;
};

class RowAllocationTable {
 public:
  RowAllocationTable(uint32_t entries, uint32_t banks, uint32_t ports_per_bank);

  std::optional<uint64_t> lookup(const RatKey& key) const;
  // The key must be absent. Returns the evicted (oldest) mapping when the table was full.
  std::optional<RatEviction> insert(const RatKey& key, uint64_t local_row_id);
  // Drops every mapping of `region` (rowspMalloc region freed or re-initialised).
  void flush_region(uint32_t region);

  uint32_t bank_of(const RatKey& key) const;
  // Reserves one access to the key's bank at the first cycle >= `earliest` with a free port.
  // `current` is the present cycle (<= earliest): bookings before it are forgotten.
  uint64_t reserve_access(const RatKey& key, uint64_t earliest, uint64_t current);

  size_t size() const { return map_.size(); }
  uint32_t entries() const { return entries_; }
  uint64_t bank_conflict_cycles() const { return conflict_cycles_; }

 private:
  struct Mapping {
    uint64_t local_row_id;
    uint64_t seq;  // insertion number: tells a live FIFO slot from a flushed one
  };
  struct FifoSlot {
    RatKey key;
    uint64_t seq;
  };

  uint32_t entries_;
  uint32_t ports_;
  RatMap<RatKey, Mapping, RatKeyHash> map_;
  std::deque<FifoSlot> fifo_;
  uint64_t next_seq_ = 0;
  // Per bank: (cycle, accesses booked), ascending; only present and future cycles, a handful.
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> bank_use_;
  uint64_t conflict_cycles_ = 0;
};

}  // namespace moehub
