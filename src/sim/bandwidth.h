#pragma once
// A data rate in bytes per second; transfer times round up to the next picosecond.

#include <cstdint>

#include "sim/time.h"
#include "sim/wide_divide.h"

namespace moehub {

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_second(uint64_t bps) { return Bandwidth(bps); }

  constexpr uint64_t bytes_per_second() const { return bps_; }
  constexpr double gb_per_second() const { return static_cast<double>(bps_) / 1e9; }

  // Time to move `bytes` at this rate: ceil(bytes * 1e12 / rate) picoseconds, in integers.
  // Saturates at 2^62 ps (about 53 days): beyond any run.time_limit, so a run that slow stops
  // at its limit instead of wrapping the time type.
  constexpr Time transfer_time(uint64_t bytes) const {
    const unsigned __int128 ps = divide_wide_up(static_cast<unsigned __int128>(bytes) * 1000000000000ULL, bps_);
    constexpr unsigned __int128 kMax = static_cast<unsigned __int128>(1) << 62;
    return Time::from_ps(static_cast<int64_t>(ps > kMax ? kMax : ps));
  }
  // The rate scaled by num/den (e.g. a share of a link), rounded down.
  constexpr Bandwidth scaled(uint64_t num, uint64_t den) const {
    return Bandwidth(static_cast<uint64_t>(static_cast<unsigned __int128>(bps_) * num / den));
  }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(uint64_t bps) : bps_(bps) {}
  uint64_t bps_ = 0;
};

}  // namespace moehub
