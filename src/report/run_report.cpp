#include "report/run_report.h"

#include <fmt/format.h>
#include <algorithm>
#include <set>

namespace moehub {
namespace {

// Flattens nested objects into "a.b" columns; arrays are kept as JSON text.
void flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      flatten(*it, key, out);
    } else if (it->is_array()) {
      continue;  // per-link and per-GPU lists stay in the JSON report
    } else if (it->is_string()) {
      out.emplace_back(key, it->get<std::string>());
    } else if (it->is_number_float()) {
      out.emplace_back(key, fmt::format("{:.3f}", it->get<double>()));
    } else {
      out.emplace_back(key, it->dump());
    }
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

uint64_t RunReport::events() const {
  uint64_t n = 0;
  for (const auto& c : systems) n += c.events;
  return n;
}

nlohmann::json RunReport::to_json() const {
  nlohmann::json j;
  j["config"] = config;
  if (!workload.is_null()) j["workload"] = workload;
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) j["results"].push_back(r);
  nlohmann::json per_system = nlohmann::json::array();
  for (const auto& c : systems) per_system.push_back({{"system", c.system}, {"events", c.events}, {"wall_s", c.wall_s}});
  j["perf"] = {{"wall_s", wall_s},
               {"cpu_s", cpu_s},
               {"threads", threads},
               {"events", events()},
               {"events_per_s", wall_s > 0 ? static_cast<double>(events()) / wall_s : 0.0},
               {"systems", per_system}};
  return j;
}

void RunReport::write(std::ostream& out, const std::string& format) const {
  if (format == "json") {
    out << to_json().dump(2) << "\n";
    return;
  }
  // Columns: the union of every result's flattened keys, in first-seen order.
  std::vector<std::string> columns;
  std::set<std::string> seen;
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  for (const auto& r : results) {
    auto& row = rows.emplace_back();
    flatten(r, "", row);
    for (const auto& [k, v] : row) {
      if (seen.insert(k).second) columns.push_back(k);
    }
  }
  const auto cell = [](const std::vector<std::pair<std::string, std::string>>& row, const std::string& col) {
    for (const auto& [k, v] : row) {
      if (k == col) return v;
    }
    return std::string();
  };
  // The table keeps the headline columns; CSV and JSON keep everything.
  if (format == "table") {
    std::vector<std::string> keep;
    for (const auto& c : columns) {
      if (c.rfind("network.", 0) == 0 || c.rfind("frame.", 0) == 0 || c.rfind("stats.", 0) == 0 || c.rfind("hub.", 0) == 0 ||
          c.rfind("functional.", 0) == 0 || c == "events" || c == "critical_gpu") {
        continue;
      }
      keep.push_back(c);
    }
    columns = keep;
  }
  // Lead with the system and its headline numbers.
  std::vector<std::string> ordered;
  for (const char* lead : {"system", "layer_us", "e2e_ms", "moehub_speedup", "fraction_of_ideal"}) {
    if (std::find(columns.begin(), columns.end(), lead) != columns.end()) ordered.emplace_back(lead);
  }
  for (const auto& c : columns) {
    if (std::find(ordered.begin(), ordered.end(), c) == ordered.end()) ordered.push_back(c);
  }
  columns = ordered;
  if (format == "csv") {
    for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << csv_field(columns[c]);
    out << "\n";
    for (const auto& row : rows) {
      for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << csv_field(cell(row, columns[c]));
      out << "\n";
    }
    return;
  }
  const auto& run = config.contains("run") ? config["run"] : nlohmann::json::object();
  out << fmt::format("model {}  hardware {}  gpus {}  tokens {}  seed {}\n", run.value("model", "?"),
                     run.value("hardware", "?"), run.value("gpus", 0), run.value("tokens", 0), run.value("seed", 0));
  if (rows.empty()) {
    out << "no system ran: none of the requested systems is implemented yet\n";
  } else {
    std::vector<size_t> width(columns.size());
    for (size_t c = 0; c < columns.size(); ++c) {
      width[c] = columns[c].size();
      for (const auto& row : rows) width[c] = std::max(width[c], cell(row, columns[c]).size());
    }
    for (size_t c = 0; c < columns.size(); ++c) out << fmt::format("{:<{}}  ", columns[c], width[c]);
    out << "\n";
    for (const auto& row : rows) {
      for (size_t c = 0; c < columns.size(); ++c) out << fmt::format("{:<{}}  ", cell(row, columns[c]), width[c]);
      out << "\n";
    }
  }
  out << fmt::format("simulated {} events in {:.3f} s ({:.3f} s of CPU, {} thread{})\n", events(), wall_s, cpu_s, threads,
                     threads == 1 ? "" : "s");
}

}  // namespace moehub
