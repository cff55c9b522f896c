#include "figures/figure_data.h"

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <fmt/format.h>

#include "figures/sweep_output.h"

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

namespace {

std::optional<double> cell_value(const RunCell& c, const std::string& field) {
  if (c.status != RunStatus::Ok) return std::nullopt;
  if (field == "moe_flops") return c.moe_flops;
  const ResultField* f = find_result_field(field);
  if (!f) throw std::logic_error("no result field '" + field + "'");
  const std::optional<double> v = f->get(c.result);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

RunStatus status_of(const RunOutcome& o) {
  return o.ok ? RunStatus::Ok : o.unsupported ? RunStatus::Unsupported : RunStatus::Failed;
}

}  // namespace

std::optional<double> FigureRuns::value(size_t point, const std::string& system, const std::string& field) const {
  const RunCell* c = cell(point, system);
  if (!c || c->status != RunStatus::Ok) return std::nullopt;
  if (seeds.empty()) return cell_value(*c, field);
  const size_t s = static_cast<size_t>(std::find(systems.begin(), systems.end(), system) - systems.begin());
  double sum = 0;
  size_t n = 0;
  for (const RunCell& r : seeds[point][s]) {
    if (const auto v = cell_value(r, field)) {
      sum += *v;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::optional<std::pair<double, double>> FigureRuns::spread(size_t point, const std::string& system,
                                                            const std::string& field) const {
  const RunCell* c = cell(point, system);
  if (seeds.empty() || !c || c->status != RunStatus::Ok) return std::nullopt;
  const size_t s = static_cast<size_t>(std::find(systems.begin(), systems.end(), system) - systems.begin());
  std::optional<std::pair<double, double>> out;
  size_t n = 0;
  for (const RunCell& r : seeds[point][s]) {
    const auto v = cell_value(r, field);
    if (!v) continue;
    ++n;
    out = out ? std::make_pair(std::min(out->first, *v), std::max(out->second, *v)) : std::make_pair(*v, *v);
  }
  if (n < 2) return std::nullopt;
  return out;
}

FigureRuns arrange_runs(const FigureSpec* spec, const SweepAxes& axes, std::vector<SweepPoint> all_points,
                        std::vector<RunRequest>& requests, std::vector<RunIndex>& where) {
  FigureRuns runs;
  runs.spec = spec;
  runs.systems = axes.systems;
  const size_t per_point = std::max<size_t>(1, axes.seeds.size());  // seeds vary fastest
  for (size_t i = 0; i < all_points.size(); i += per_point) runs.points.push_back(all_points[i]);
  runs.cells.assign(runs.points.size(), std::vector<RunCell>(runs.systems.size()));
  if (!axes.seeds.empty()) {
    runs.seeds.assign(runs.points.size(),
                      std::vector<std::vector<RunCell>>(runs.systems.size(), std::vector<RunCell>(per_point)));
  }
  for (size_t i = 0; i < all_points.size(); ++i) {
    for (size_t s = 0; s < runs.systems.size(); ++s) {
      auto [system, point] = system_run(axes, all_points[i], runs.systems[s]);  // a variant runs its system
      requests.push_back({std::move(point), std::move(system)});
      where.push_back({i / per_point, s, i % per_point});
    }
  }
  return runs;
}

void fill_run(FigureRuns& runs, const RunIndex& at, const RunOutcome& outcome) {
  RunCell c;
  c.status = status_of(outcome);
  c.error = outcome.error;
  if (outcome.ok) {
    c.result = outcome.result;
    c.moe_flops = outcome.moe_flops;
  }
  if (runs.seeds.empty()) {
    runs.cells[at.point][at.system] = std::move(c);
    return;
  }
  std::vector<RunCell>& replicas = runs.seeds[at.point][at.system];
  replicas[at.seed] = std::move(c);
  // The point's cell: the first seed's run, and a seed without a result stands for the point.
  RunCell& cell = runs.cells[at.point][at.system];
  cell = replicas.front();
  for (const RunCell& r : replicas) {
    if (r.status != RunStatus::Ok && r.status != RunStatus::NotImplemented) {
      cell.status = r.status;
      cell.error = r.error;
    }
  }
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
  if (spec.kind == "sweep") {
    SweepOutput sweep = build_sweep_output(sweep_file_of(spec), context.quick, context.runs.at(spec.name));
    FigureOutput out;
    out.csvs = std::move(sweep.csvs);
    out.plots = std::move(sweep.plots);
    return out;
  }
  if (!context.configs) throw std::logic_error("figure " + spec.name + " needs the configurations of its points");
  return build_sweep_figure(spec, context.runs.at(spec.name), *context.configs);
}

}  // namespace moehub
