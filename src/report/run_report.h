#pragma once
// The outcome of `moehub run`: the resolved configuration, one entry per system, and how long
// the simulation itself took. Rendered as a table, JSON or CSV.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "platform/layer_result.h"

namespace moehub {

// Systems that `run.systems = "all"` left out: (name, reason), in registry order.
using SkippedSystems = std::vector<std::pair<std::string, std::string>>;
nlohmann::json skipped_json(const SkippedSystems& skipped);    // [{"system", "reason"}, ...]
std::string skipped_line(const SkippedSystems& skipped);       // one line for text reports

struct RunReport {
  nlohmann::json config;                // Config::to_json()
  nlohmann::json workload = nullptr;    // routing statistics, when a workload was generated
  std::vector<LayerResult> results;     // one per system
  // Systems that `run.systems = "all"` left out because they have no model of this
  // configuration: (name, reason). Written only when there are some.
  SkippedSystems skipped;
  // How long the simulation took on this host: the `perf` section, excluded from determinism
  // checks. CPU time over wall time says how well the threads were used, and tells a slow host
  // (both up) from a slow build (CPU up per event).
  double wall_s = 0;
  double cpu_s = 0;  // process CPU time, every thread
  unsigned threads = 1;
  struct SystemCost {
    std::string system;
    uint64_t events = 0;
    double wall_s = 0;  // on its own thread
  };
  std::vector<SystemCost> systems;
  uint64_t events() const;  // over every system

  nlohmann::json to_json() const;
  void write(std::ostream& out, const std::string& format) const;  // "table" (headline columns), "wide" (every column), "json" or "csv"
};

}  // namespace moehub
