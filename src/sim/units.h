#pragma once
// Parsing of quantities written with units, as they appear in configs and flags:
// "250ns", "1.98GHz", "400GB/s", "128B", "80GiB". Exact decimal arithmetic, no doubles.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/bandwidth.h"
#include "sim/frequency.h"
#include "sim/time.h"

namespace moehub {

// The reason is a short phrase suitable after "<key>: ".
class UnitParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

Time parse_time(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
Frequency parse_frequency(std::string_view text);
uint64_t parse_bytes(std::string_view text);

// Canonical spellings used when echoing a configuration back.
std::string format_time(Time t);
std::string format_bandwidth(Bandwidth b);
std::string format_frequency(Frequency f);
std::string format_bytes(uint64_t bytes);

}  // namespace moehub
