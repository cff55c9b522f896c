#pragma once
// Cycle arithmetic of the hub clock: cycle k begins at ceil(k * 1e12 / hz) ps, so cycle edges
// are exact integers and never drift.

#include <cstdint>

#include "sim/frequency.h"
#include "sim/time.h"
#include "sim/wide_divide.h"

namespace moehub {

class HubClock {
 public:
  explicit HubClock(Frequency f) : f_(f) {}

  Time time_of(uint64_t cycle) const { return f_.cycles(cycle); }
  // The first cycle edge at or after `t`.
  uint64_t cycle_at_or_after(Time t) const {
    uint64_t k = static_cast<uint64_t>(divide_wide(static_cast<unsigned __int128>(t.ps()) * f_.hertz(), 1000000000000ULL));
    while (time_of(k) < t) ++k;  // at most one step: the division rounded down
    return k;
  }
  Frequency frequency() const { return f_; }

 private:
  Frequency f_;
};

}  // namespace moehub
