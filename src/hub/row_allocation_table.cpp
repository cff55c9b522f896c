#include "hub/row_allocation_table.h"

#include <algorithm>
#include <stdexcept>

namespace moehub {

RowAllocationTable::RowAllocationTable(uint32_t entries, uint32_t banks, uint32_t ports_per_bank)
    : entries_(entries), ports_(ports_per_bank), bank_use_(banks) {
  if (entries == 0 || banks == 0 || ports_per_bank == 0) {
    throw std::logic_error("RowAllocationTable: entries, banks and ports must be positive");
  }
}

std::optional<uint64_t> RowAllocationTable::lookup(const RatKey& key) const {
  const Mapping* m = map_.find(key);
  if (m == nullptr) return std::nullopt;
  return m->local_row_id;
}

std::optional<RatEviction> RowAllocationTable::insert(const RatKey& key, uint64_t local_row_id) {
  if (map_.find(key) != nullptr) throw std::logic_error("RowAllocationTable::insert: key already cached");
  std::optional<RatEviction> evicted;
  if (map_.size() == entries_) {
    while (true) {
      const FifoSlot oldest = fifo_.front();
      fifo_.pop_front();
      const Mapping* m = map_.find(oldest.key);
      if (m != nullptr && m->seq == oldest.seq) {
        evicted = RatEviction{oldest.key, m->local_row_id};
        map_.erase(oldest.key);
        break;
      }
    }
  }
  const uint64_t seq = next_seq_++;
  map_.insert(key, Mapping{local_row_id, seq});
  fifo_.push_back(FifoSlot{key, seq});
  return evicted;
}

void RowAllocationTable::flush_region(uint32_t region) {
  std::deque<FifoSlot> kept;
  for (const FifoSlot& s : fifo_) {
    const Mapping* m = map_.find(s.key);
    if (m == nullptr || m->seq != s.seq) continue;  // stale slot: drop it too
    if (s.key.region == region) {
      map_.erase(s.key);
    } else {
      kept.push_back(s);
    }
  }
  fifo_ = std::move(kept);
}

uint32_t RowAllocationTable::bank_of(const RatKey& key) const {
  return static_cast<uint32_t>(RatKeyHash{}(key) % bank_use_.size());
}

uint64_t RowAllocationTable::reserve_access(const RatKey& key, uint64_t earliest, uint64_t current) {
  if (current > earliest) throw std::logic_error("RowAllocationTable: access booked in the past");
  auto& use = bank_use_[bank_of(key)];
  const auto at_or_after = [&use](uint64_t c) {
    return std::lower_bound(use.begin(), use.end(), c, [](const auto& b, uint64_t x) { return b.first < x; });
  };
  // Bookings in past cycles can no longer matter: requests arrive in time order.
  use.erase(use.begin(), at_or_after(current));
  uint64_t cycle = earliest;
  auto it = at_or_after(cycle);
  for (; it != use.end() && it->first == cycle && it->second >= ports_; ++it) ++cycle;
  if (it != use.end() && it->first == cycle) {
    ++it->second;
  } else {
    use.insert(it, {cycle, 1});
  }
  conflict_cycles_ += cycle - earliest;
  return cycle;
}

}  // namespace moehub
