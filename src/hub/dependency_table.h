#pragma once
// Dependency Table (paper IV-C1): address ranges of a consumer kernel's input mapped to the
// thread-block groups that need them, built from the kernel's static tiling (a group = the
// thread blocks of one M-tile, which need that tile's rows). Each entry carries the bytes the
// group must see acknowledged before it may run.

#include <cstdint>
#include <algorithm>
#include <vector>

namespace moehub {

struct DependencyEntry {
  uint64_t begin = 0;            // device address range [begin, end)
  uint64_t end = 0;
  uint32_t group = 0;            // thread-block group id
  uint64_t threshold_bytes = 0;  // acknowledged bytes in this range that make it complete
  // Rows of `row_stride` bytes of which only the first `counted_per_row` count (so the .nop
  // source-metadata column does not count toward GEMM1's data); 0: every byte counts.
  uint64_t row_stride = 0;
  uint64_t counted_per_row = 0;
};

// The consumer kernel's tiling over a rowspMalloc region (rows placed densely from Base).
struct ConsumerTiling {
  uint64_t base = 0;             // region Base
  uint64_t row_size = 0;         // bytes per row (RowSize)
  uint64_t counted_bytes_per_row = 0;  // bytes of a row whose acks count (e.g. hidden data, not the .nop column)
  uint64_t rows_per_tile = 0;    // the GEMM's M-tile
  uint64_t capacity_rows = 0;    // rows the region holds (the compiler's conservative bound)
  uint32_t first_group = 0;      // group id of tile 0; tile t is group first_group + t
};

class DependencyTable {
 public:
  explicit DependencyTable(uint32_t capacity) : capacity_(capacity) {}

  // UserError (hub.dam.table_entries) when full; std::logic_error for an empty range.
  void add(const DependencyEntry& entry);
  // One entry per M-tile, threshold rows_per_tile x counted_bytes_per_row; the last tile may be
  // partial (its threshold is still a full tile's: AllReady releases it). Returns the tiles.
  uint32_t add_tiling(const ConsumerTiling& tiling);
  void clear();

  // Calls `visit(entry, counted bytes)` for every entry overlapping [address, address+bytes);
  // counted bytes are the overlap less any bytes outside the counted part of a row.
  // A template rather than std::function: it runs once per acknowledged packet.
  template <typename Visit>
  void for_each_overlap(uint64_t address, uint64_t bytes, Visit&& visit) const {
    const uint64_t end = address + bytes;
    const uint64_t from = address > longest_ ? address - longest_ : 0;
    auto it = std::lower_bound(entries_.begin(), entries_.end(), from,
                               [](const DependencyEntry& x, uint64_t b) { return x.begin < b; });
    for (; it != entries_.end() && it->begin < end; ++it) {
      const uint64_t lo = std::max(address, it->begin);
      const uint64_t hi = std::min(end, it->end);
      if (lo < hi) visit(*it, counted(*it, lo, hi));
    }
  }

  const std::vector<DependencyEntry>& entries() const { return entries_; }
  uint32_t capacity() const { return capacity_; }

 private:
  // Bytes of [lo, hi) that fall in the counted prefix of their row.
  static uint64_t counted(const DependencyEntry& e, uint64_t lo, uint64_t hi);

  uint32_t capacity_;
  std::vector<DependencyEntry> entries_;  // sorted by begin
  uint64_t longest_ = 0;                  // longest range: bounds the search window
};

}  // namespace moehub
