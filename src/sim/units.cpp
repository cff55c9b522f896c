#include "sim/units.h"

#include <array>
#include <cctype>
#include <fmt/format.h>
#include <utility>

namespace moehub {
namespace {

using u128 = unsigned __int128;
constexpr u128 kLimit = static_cast<u128>(INT64_MAX);

struct Unit {
  std::string_view suffix;
  u128 scale;  // value of one unit in the base unit
};

struct Decimal {
  u128 mantissa = 0;
  int fraction_digits = 0;
};

// Splits "1.98GHz" into a decimal number and a suffix; rejects signs, exponents and junk.
std::pair<Decimal, std::string_view> split_number(std::string_view text, std::string_view what,
                                                  std::string_view example) {
  const auto fail = [&](std::string_view why) {
    throw UnitParseError(fmt::format("{} (expected a {} such as '{}', got '{}')", why, what, example, text));
  };
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty()) fail("empty value");
  if (text.front() == '-') fail("must not be negative");
  Decimal d;
  size_t i = 0;
  bool digits = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      if (d.mantissa > kLimit) fail("value too large");
      d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
      if (point) ++d.fraction_digits;
      // 10^fraction_digits must fit the 128-bit divisor (found by fuzz_units: ".000...0"
      // with 40 zeros divided by zero); no unit is finer than 10^-12 of another.
      if (d.fraction_digits > 24) fail("too many decimal places");
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) fail("not a number");
  std::string_view suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  return {d, suffix};
}

template <size_t N>
uint64_t parse_with_units(std::string_view text, const std::array<Unit, N>& units, std::string_view what,
                          std::string_view example, bool allow_bare) {
  auto [d, suffix] = split_number(text, what, example);
  u128 scale = 0;
  if (suffix.empty() && allow_bare) {
    scale = 1;
  } else {
    for (const Unit& u : units) {
      if (suffix == u.suffix) scale = u.scale;
    }
  }
  if (scale == 0) {
    if (suffix.empty()) {
      throw UnitParseError(fmt::format("missing unit in '{}' (expected a {} such as '{}')", text, what, example));
    }
    std::string known;
    for (const Unit& u : units) {
      if (!known.empty()) known += ", ";
      known += u.suffix;
    }
    throw UnitParseError(fmt::format("unknown unit '{}' in '{}' (expected a {} such as '{}'; units: {})", suffix,
                                     text, what, example, known));
  }
  u128 divisor = 1;
  for (int k = 0; k < d.fraction_digits; ++k) divisor *= 10;
  if (d.mantissa != 0 && scale > kLimit * divisor / d.mantissa) {
    throw UnitParseError(fmt::format("value too large: '{}'", text));
  }
  const u128 product = d.mantissa * scale;
  if (product % divisor != 0) {
    throw UnitParseError(fmt::format("'{}' is not a whole number of the base unit", text));
  }
  return static_cast<uint64_t>(product / divisor);
}

constexpr std::array<Unit, 5> kTimeUnits{{{"ps", 1},
                                          {"ns", 1000},
                                          {"us", 1000000},
                                          {"ms", 1000000000ULL},
                                          {"s", 1000000000000ULL}}};
constexpr std::array<Unit, 8> kBandwidthUnits{{{"B/s", 1},
                                               {"KB/s", 1000},
                                               {"MB/s", 1000000},
                                               {"GB/s", 1000000000ULL},
                                               {"TB/s", 1000000000000ULL},
                                               {"KiB/s", 1ULL << 10},
                                               {"MiB/s", 1ULL << 20},
                                               {"GiB/s", 1ULL << 30}}};
constexpr std::array<Unit, 5> kFrequencyUnits{
    {{"Hz", 1}, {"KHz", 1000}, {"kHz", 1000}, {"MHz", 1000000}, {"GHz", 1000000000ULL}}};
constexpr std::array<Unit, 8> kByteUnits{{{"B", 1},
                                          {"KB", 1000},
                                          {"MB", 1000000},
                                          {"GB", 1000000000ULL},
                                          {"KiB", 1ULL << 10},
                                          {"MiB", 1ULL << 20},
                                          {"GiB", 1ULL << 30},
                                          {"TiB", 1ULL << 40}}};

// Picks the largest unit that represents the value exactly.
template <size_t N>
std::string format_exact(uint64_t v, const std::array<Unit, N>& units, size_t first, size_t last) {
  for (size_t i = last + 1; i-- > first;) {
    const u128 s = units[i].scale;
    if (v != 0 && v % s == 0) return fmt::format("{}{}", static_cast<uint64_t>(v / s), units[i].suffix);
  }
  return fmt::format("{}{}", v, units[first].suffix);
}

}  // namespace

Time parse_time(std::string_view text) {
  return Time::from_ps(static_cast<int64_t>(parse_with_units(text, kTimeUnits, "time", "250ns", false)));
}

Bandwidth parse_bandwidth(std::string_view text) {
  return Bandwidth::bytes_per_second(parse_with_units(text, kBandwidthUnits, "bandwidth", "400GB/s", false));
}

Frequency parse_frequency(std::string_view text) {
  return Frequency::hertz(parse_with_units(text, kFrequencyUnits, "frequency", "1.98GHz", false));
}

uint64_t parse_bytes(std::string_view text) {
  return parse_with_units(text, kByteUnits, "size", "128B", true);
}

std::string format_time(Time t) { return format_exact(static_cast<uint64_t>(t.ps()), kTimeUnits, 0, 4); }
std::string format_bandwidth(Bandwidth b) { return format_exact(b.bytes_per_second(), kBandwidthUnits, 0, 4); }
std::string format_frequency(Frequency f) { return format_exact(f.hertz(), kFrequencyUnits, 0, 4); }
std::string format_bytes(uint64_t bytes) { return format_exact(bytes, kByteUnits, 0, 0); }

}  // namespace moehub
