#pragma once
// A clock frequency in hertz; cycle counts convert to time rounding up to the next picosecond.

#include <cstdint>

#include "sim/time.h"
#include "sim/wide_divide.h"

namespace moehub {

class Frequency {
 public:
  constexpr Frequency() = default;
  static constexpr Frequency hertz(uint64_t hz) { return Frequency(hz); }

  constexpr uint64_t hertz() const { return hz_; }
  constexpr double ghz() const { return static_cast<double>(hz_) / 1e9; }

  // ceil(cycles * 1e12 / hz) picoseconds.
  constexpr Time cycles(uint64_t n) const {
    return Time::from_ps(static_cast<int64_t>(divide_wide_up(static_cast<unsigned __int128>(n) * 1000000000000ULL, hz_)));
  }
  constexpr auto operator<=>(const Frequency&) const = default;

 private:
  constexpr explicit Frequency(uint64_t hz) : hz_(hz) {}
  uint64_t hz_ = 0;
};

}  // namespace moehub
