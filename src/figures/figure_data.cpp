#include "figures/figure_data.h"

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <fmt/format.h>

namespace moehub {

const char* run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::Ok: return "ok";
    case RunStatus::NotImplemented: return "not implemented";
    case RunStatus::Unsupported: return "unsupported";
    case RunStatus::Failed: return "failed";
  }
  return "?";
}

const RunCell* FigureRuns::cell(size_t point, const std::string& system) const {
  const auto it = std::find(systems.begin(), systems.end(), system);
  if (it == systems.end() || point >= cells.size()) return nullptr;
  return &cells[point][static_cast<size_t>(it - systems.begin())];
}

std::optional<double> FigureRuns::value(size_t point, const std::string& system, const std::string& field) const {
  const RunCell* c = cell(point, system);
  if (!c || c->status != RunStatus::Ok) return std::nullopt;
  if (field == "moe_flops") return c->moe_flops;
  const ResultField* f = find_result_field(field);
  if (!f) throw std::logic_error("no result field '" + field + "'");
  const std::optional<double> v = f->get(c->result);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::vector<std::string> FigureRuns::systems_with_data() const {
  std::vector<std::string> out;
  for (size_t s = 0; s < systems.size(); ++s) {
    for (const auto& row : cells) {
      if (row[s].status == RunStatus::Ok) {
        out.push_back(systems[s]);
        break;
      }
    }
  }
  return out;
}

std::string FigureRuns::missing_note() const {
  std::vector<std::string> missing, unsupported, failed;
  for (size_t s = 0; s < systems.size(); ++s) {
    bool any_missing = false, any_unsupported = false, any_failed = false;
    for (const auto& row : cells) {
      any_missing |= row[s].status == RunStatus::NotImplemented;
      any_unsupported |= row[s].status == RunStatus::Unsupported;
      any_failed |= row[s].status == RunStatus::Failed;
    }
    if (any_missing) missing.push_back(systems[s]);
    if (any_unsupported) unsupported.push_back(systems[s]);
    if (any_failed) failed.push_back(systems[s]);
  }
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(fmt::format("not implemented: {}", fmt::join(missing, ", ")));
  if (!unsupported.empty()) parts.push_back(fmt::format("unsupported points: {}", fmt::join(unsupported, ", ")));
  if (!failed.empty()) parts.push_back(fmt::format("failed runs: {}", fmt::join(failed, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string CsvTable::to_csv() const {
  const auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + "\"";
  };
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += field(cells[i]);
    }
    out += "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string csv_number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "";
  return fmt::format("{:.6g}", *v);
}

FigureOutput build_figure(const FigureSpec& spec, const FigureContext& context) {
  if (spec.kind == "table") return build_table_figure(spec, context);
  if (spec.kind == "area") return build_area_figure(spec, context);
  return build_sweep_figure(spec, context.runs.at(spec.name));
}

}  // namespace moehub
