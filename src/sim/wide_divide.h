#pragma once
// Division of a 128-bit numerator by a 64-bit divisor. Rate conversions (bytes x 1e12 / B/s,
// cycles x 1e12 / Hz) need 128-bit products, but on the hot paths the product almost always
// fits 64 bits, where the division is one instruction instead of a library call.

#include <cstdint>

namespace moehub {

constexpr unsigned __int128 divide_wide(unsigned __int128 a, uint64_t b) {
  if ((a >> 64) == 0) return static_cast<uint64_t>(a) / b;
  return a / b;
}

// ceil(a / b)
constexpr unsigned __int128 divide_wide_up(unsigned __int128 a, uint64_t b) { return divide_wide(a + (b - 1), b); }

}  // namespace moehub
