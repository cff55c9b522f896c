#include "systems/tutel/tutel_capacity.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

int64_t tutel_capacity(double cf, int64_t tokens_per_gpu, int64_t experts, int64_t top_k, int64_t max_rows,
                       int64_t alignment) {
  if (experts < 1 || top_k < 1 || alignment < 1) throw std::logic_error("tutel_capacity: bad shape");
  const int64_t samples_per_expert = (tokens_per_gpu + experts - 1) / experts;
  // k * int(|cf| * samples), kept in floating point until it is known to fit: Tutel's locations
  // are 32-bit, and a larger product would not convert to an integer at all.
  const double scaled = static_cast<double>(top_k) * std::trunc(std::abs(cf) * static_cast<double>(samples_per_expert));
  int64_t capacity = 0;
  if (cf > 0) {
    if (!(scaled <= static_cast<double>(kMaxTutelCapacity))) {
      throw UserError("systems.tutel.capacity_factor",
                      fmt::format("gives {:g} rows per expert; Tutel's 32-bit locations hold at most {}", scaled, kMaxTutelCapacity));
    }
    capacity = static_cast<int64_t>(scaled);
  } else {
    capacity = max_rows;
    if (cf < 0 && scaled < static_cast<double>(capacity)) capacity = static_cast<int64_t>(scaled);
  }
  const int64_t remainder = capacity % alignment;
  if (remainder > 0) capacity += alignment - remainder;
  return capacity;
}

int64_t max_rows_per_source_expert(const Workload& w) {
  int64_t m = 0;
  for (int64_t g = 0; g < w.tokens().gpus(); ++g) {
    for (int64_t e = 0; e < w.model().experts(); ++e) m = std::max(m, w.plan().rows_to_expert(g, e));
  }
  return m;
}

TutelSlots::TutelSlots(const Workload& w, int64_t capacity) : TutelSlots(w.routing(), w.tokens(), capacity) {}

TutelSlots::TutelSlots(const Routing& r, const TokenPartition& tokens, int64_t capacity)
    : capacity_(capacity), top_k_(r.top_k()), experts_(r.experts()) {
  const int64_t gpus = tokens.gpus();
  location_.assign(static_cast<size_t>(r.rows()), 0);
  kept_.assign(static_cast<size_t>(gpus * experts_), 0);
  std::vector<int64_t> next(static_cast<size_t>(experts_));
  for (int64_t g = 0; g < gpus; ++g) {
    std::fill(next.begin(), next.end(), 0);
    // extract_critical: slot 0 of every local token in token order, then slot 1 on top, ...
    for (int64_t j = 0; j < top_k_; ++j) {
      for (int64_t t = tokens.begin(g); t < tokens.end(g); ++t) {
        const int64_t e = r.expert(t, j);
        const int64_t loc = next[static_cast<size_t>(e)]++;
        location_[static_cast<size_t>(t * top_k_ + j)] = loc;
        if (loc < capacity_) {
          ++kept_[static_cast<size_t>(g * experts_ + e)];
        } else {
          ++dropped_rows_;
        }
      }
    }
    for (int64_t e = 0; e < experts_; ++e) max_rows_ = std::max(max_rows_, next[static_cast<size_t>(e)]);
  }
  for (int64_t t = 0; t < r.tokens(); ++t) {
    for (int64_t j = 0; j < top_k_; ++j) {
      if (dropped(t, j)) {
        ++dropped_tokens_;
        break;
      }
    }
  }
}

}  // namespace moehub
