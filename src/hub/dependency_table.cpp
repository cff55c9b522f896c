#include "hub/dependency_table.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

// Bytes of [lo, hi) that fall in the counted prefix of their row.
uint64_t DependencyTable::counted(const DependencyEntry& e, uint64_t lo, uint64_t hi) {
  if (e.row_stride == 0 || e.counted_per_row >= e.row_stride) return hi - lo;
  uint64_t n = 0;
  for (uint64_t at = lo; at < hi;) {
    const uint64_t row_start = e.begin + (at - e.begin) / e.row_stride * e.row_stride;
    const uint64_t count_end = std::min(hi, row_start + e.counted_per_row);
    if (at < count_end) n += count_end - at;
    at = std::min(hi, row_start + e.row_stride);
  }
  return n;
}

void DependencyTable::add(const DependencyEntry& e) {
  if (e.end <= e.begin) throw std::logic_error("DependencyTable: empty address range");
  if (entries_.size() >= capacity_) {
    throw UserError("hub.dam.table_entries",
                    fmt::format("the consumer kernel needs more than {} dependency entries", capacity_));
  }
  const auto at = std::upper_bound(entries_.begin(), entries_.end(), e.begin,
                                   [](uint64_t b, const DependencyEntry& x) { return b < x.begin; });
  entries_.insert(at, e);
  longest_ = std::max(longest_, e.end - e.begin);
}

uint32_t DependencyTable::add_tiling(const ConsumerTiling& t) {
  if (t.row_size == 0 || t.rows_per_tile == 0 || t.capacity_rows == 0 || t.counted_bytes_per_row == 0 ||
      t.counted_bytes_per_row > t.row_size) {
    throw std::logic_error("DependencyTable::add_tiling: bad tiling");
  }
  const uint64_t tiles = (t.capacity_rows + t.rows_per_tile - 1) / t.rows_per_tile;
  for (uint64_t i = 0; i < tiles; ++i) {
    const uint64_t first_row = i * t.rows_per_tile;
    const uint64_t rows = std::min(t.rows_per_tile, t.capacity_rows - first_row);
    add(DependencyEntry{t.base + first_row * t.row_size, t.base + (first_row + rows) * t.row_size,
                        static_cast<uint32_t>(t.first_group + i), t.rows_per_tile * t.counted_bytes_per_row,
                        t.row_size, t.counted_bytes_per_row});
  }
  return static_cast<uint32_t>(tiles);
}

void DependencyTable::clear() {
  entries_.clear();
  longest_ = 0;
}

}  // namespace moehub
