#pragma once
// Simulated time: a strong integer type in picoseconds (int64 covers ~106 days).

#include <compare>
#include <cstdint>
#include <limits>

namespace moehub {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static constexpr Time from_ns(int64_t ns) { return Time(ns * 1000); }
  static constexpr Time from_us(int64_t us) { return Time(us * 1000000); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ps() const { return ps_; }
  // Reporting only: never feed these back into the simulation.
  constexpr double ns() const { return static_cast<double>(ps_) / 1e3; }
  constexpr double us() const { return static_cast<double>(ps_) / 1e6; }
  constexpr double ms() const { return static_cast<double>(ps_) / 1e9; }
  constexpr double seconds() const { return static_cast<double>(ps_) / 1e12; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time operator*(int64_t k) const { return Time(ps_ * k); }
  constexpr Time& operator+=(Time o) { ps_ += o.ps_; return *this; }
  constexpr Time& operator-=(Time o) { ps_ -= o.ps_; return *this; }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

constexpr Time max(Time a, Time b) { return a < b ? b : a; }
constexpr Time min(Time a, Time b) { return a < b ? a : b; }

}  // namespace moehub
