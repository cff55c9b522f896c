#pragma once
// The outcome of `moehub run`: the resolved configuration, one entry per system, and how long
// the simulation itself took. Rendered as a table, JSON or CSV.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace moehub {

struct RunReport {
  nlohmann::json config;                // Config::to_json()
  nlohmann::json workload = nullptr;    // routing statistics, when a workload was generated
  std::vector<nlohmann::json> results;  // one object per system; "system" names it
  double wall_s = 0;                    // excluded from determinism checks
  uint64_t events = 0;

  nlohmann::json to_json() const;
  void write(std::ostream& out, const std::string& format) const;  // "table", "json" or "csv"
};

}  // namespace moehub
