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

nlohmann::json skipped_json(const SkippedSystems& skipped) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [system, reason] : skipped) j.push_back({{"system", system}, {"reason", reason}});
  return j;
}

std::string skipped_line(const SkippedSystems& skipped) {
  std::string line = "left out of 'all' (no model of this configuration):";
  for (size_t i = 0; i < skipped.size(); ++i) {
    line += fmt::format("{} {}: {}", i ? ";" : "", skipped[i].first, skipped[i].second);
  }
  return line + "\n";
}

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
  for (const auto& r : results) j["results"].push_back(r.to_json());
  if (!skipped.empty()) j["skipped"] = skipped_json(skipped);
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

namespace {

using Row = std::vector<std::pair<std::string, std::string>>;

std::string cell_of(const Row& row, const std::string& col) {
  for (const auto& [k, v] : row) {
    if (k == col) return v;
  }
  return std::string();
}

// Lead with the system and its headline numbers, then the rest in first-seen order.
std::vector<std::string> lead_headlines(const std::vector<std::string>& columns) {
  std::vector<std::string> ordered;
  for (const char* lead : {"system", "layer_us", "e2e_ms", "moehub_speedup", "fraction_of_ideal"}) {
    if (std::find(columns.begin(), columns.end(), lead) != columns.end()) ordered.emplace_back(lead);
  }
  for (const auto& c : columns) {
    if (std::find(ordered.begin(), ordered.end(), c) == ordered.end()) ordered.push_back(c);
  }
  return ordered;
}

// Whether the wide table shows a flattened key (CSV and JSON keep everything).
bool wide_column(const std::string& c) {
  for (const char* prefix : {"network.", "frame.", "stats.", "hub.", "functional."}) {
    if (c.rfind(prefix, 0) == 0) return false;
  }
  return c != "events" && c != "critical_gpu";
}

// The `i`-th largest item of a result's breakdown, "name us" (equal values in name order).
std::string breakdown_item(const LayerResult& r, size_t i) {
  std::vector<std::pair<double, std::string>> items;
  for (size_t c = 0; c < kActivityCount; ++c) items.emplace_back(r.breakdown[c].us(), activity_name(static_cast<Activity>(c)));
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  return i < items.size() ? fmt::format("{} {:.1f}", items[i].second, items[i].first) : std::string();
}

// The default table's columns, in order: a header and the cell of one result.
struct HeadlineColumn {
  const char* header;
  std::string (*cell)(const LayerResult&);
};

std::string field_cell(const LayerResult& r, const char* key) {
  const std::optional<double> v = find_result_field(key)->get(r);  // a key of result_fields()
  return v ? fmt::format("{:.3f}", *v) : std::string();
}

const std::vector<HeadlineColumn>& headline_columns() {
  static const std::vector<HeadlineColumn> columns{
      {"system", [](const LayerResult& r) { return r.system; }},
      {"layer_us", [](const LayerResult& r) { return field_cell(r, "layer_us"); }},
      {"e2e_ms", [](const LayerResult& r) { return field_cell(r, "e2e_ms"); }},
      {"moehub_speedup", [](const LayerResult& r) { return field_cell(r, "moehub_speedup"); }},
      {"of_ideal", [](const LayerResult& r) { return field_cell(r, "fraction_of_ideal"); }},
      {"largest_us", [](const LayerResult& r) { return breakdown_item(r, 0); }},
      {"second_us", [](const LayerResult& r) { return breakdown_item(r, 1); }}};
  return columns;
}

void write_columns(std::ostream& out, const std::vector<std::string>& columns, const std::vector<Row>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = columns[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], cell_of(row, columns[c]).size());
  }
  const auto line = [&](const auto& text_of) {
    std::string s;
    for (size_t c = 0; c < columns.size(); ++c) s += fmt::format("{:<{}}  ", text_of(c), width[c]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line([&](size_t c) { return columns[c]; });
  for (const auto& row : rows) line([&](size_t c) { return cell_of(row, columns[c]); });
}

}  // namespace

void RunReport::write(std::ostream& out, const std::string& format) const {
  if (format == "json") {
    out << to_json().dump(2) << "\n";
    return;
  }
  // Columns of CSV and the wide table: the union of every result's flattened keys.
  std::vector<std::string> columns;
  std::set<std::string> seen;
  std::vector<Row> rows;
  for (const auto& r : results) {
    auto& row = rows.emplace_back();
    flatten(r.to_json(), "", row);
    for (const auto& [k, v] : row) {
      if (seen.insert(k).second) columns.push_back(k);
    }
  }
  if (format == "csv") {
    columns = lead_headlines(columns);
    for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << csv_field(columns[c]);
    out << "\n";
    for (const auto& row : rows) {
      for (size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << csv_field(cell_of(row, columns[c]));
      out << "\n";
    }
    return;
  }
  const auto& run = config.contains("run") ? config["run"] : nlohmann::json::object();
  out << fmt::format("model {}  hardware {}  gpus {}  tokens {}  seed {}\n", run.value("model", "?"),
                     run.value("hardware", "?"), run.value("gpus", 0), run.value("tokens", 0), run.value("seed", 0));
  if (rows.empty()) {
    out << "no system ran: none of the requested systems is implemented yet\n";
  } else if (format == "wide") {
    std::vector<std::string> keep;
    for (const auto& c : columns) {
      if (wide_column(c)) keep.push_back(c);
    }
    write_columns(out, lead_headlines(keep), rows);
  } else {
    std::vector<std::string> headers;
    for (const HeadlineColumn& c : headline_columns()) headers.emplace_back(c.header);
    std::vector<Row> headlines;
    for (const auto& r : results) {
      Row& row = headlines.emplace_back();
      for (const HeadlineColumn& c : headline_columns()) row.emplace_back(c.header, c.cell(r));
    }
    write_columns(out, headers, headlines);
    out << "of_ideal: fraction_of_ideal; largest_us, second_us: the two largest breakdown_us items; "
           "--format wide: every column\n";
  }
  if (!skipped.empty()) out << skipped_line(skipped);
  out << fmt::format("simulated {} events in {:.3f} s ({:.3f} s of CPU, {} thread{})\n", events(), wall_s, cpu_s, threads,
                     threads == 1 ? "" : "s");
}

}  // namespace moehub
