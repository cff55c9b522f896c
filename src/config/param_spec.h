#pragma once
// The declaration of one configuration parameter: its key path, type, unit, range and meaning.
// Values themselves live in the TOML presets under configs/, never here.

#include <optional>
#include <string>
#include <vector>

namespace moehub {

enum class ParamType { Integer, Real, Boolean, String, Choice, Time, Bandwidth, Frequency, Bytes, IntegerList };

const char* param_type_name(ParamType t);

struct ParamSpec {
  std::string path;  // full key path, e.g. "gpu.sm_count"
  ParamType type = ParamType::Integer;
  std::string description;
  std::string unit;  // for numbers without a unit type: "tokens", "fraction", ...
  // Bounds compare against the value in its base unit (ps, B/s, Hz, bytes, or the number).
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  std::vector<std::string> choices;  // for Choice

  ParamSpec& at_least(double v) { min = v; min_exclusive = false; return *this; }
  ParamSpec& positive() { min = 0; min_exclusive = true; return *this; }
  ParamSpec& at_most(double v) { max = v; return *this; }
  ParamSpec& range(double lo, double hi) { return at_least(lo).at_most(hi); }
  ParamSpec& in_unit(std::string u) { unit = std::move(u); return *this; }

  // "ps", "B/s", ... or the declared unit; used by `moehub list`.
  std::string display_unit() const;
};

}  // namespace moehub
