// libFuzzer target: the unit parsers behind every time, bandwidth, frequency and size value.
// A malformed value is a UnitParseError (the config layer names the key and exits 2).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto attempt = [&](auto parse) {
    try {
      parse(text);
    } catch (const moehub::UnitParseError&) {
    }
  };
  attempt([](std::string_view t) { return moehub::parse_time(t); });
  attempt([](std::string_view t) { return moehub::parse_bandwidth(t); });
  attempt([](std::string_view t) { return moehub::parse_frequency(t); });
  attempt([](std::string_view t) { return moehub::parse_bytes(t); });
  return 0;
}
