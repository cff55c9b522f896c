#include "figures/sweep_output.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>

#include "platform/layer_result.h"

namespace moehub {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The value of one drawn dimension (an axis or "system") for the run (point, system).
std::string dimension_value(const SweepPoint& p, const std::string& system, const std::string& dim) {
  if (dim == "system") return system;
  for (const auto& [name, value] : p.coordinates) {
    if (name == dim) return value;
  }
  return {};
}

// Values in first-appearance order.
void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

struct Spread {
  double mean = kNaN, low = kNaN, high = kNaN;
  size_t n = 0;
};

Spread spread(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  double sum = 0;
  s.low = s.high = v.front();
  for (double x : v) {
    sum += x;
    s.low = std::min(s.low, x);
    s.high = std::max(s.high, x);
  }
  s.mean = sum / static_cast<double>(v.size());
  s.n = v.size();
  return s;
}

std::vector<std::string> field_keys() {
  std::vector<std::string> keys;
  for (const ResultField& f : result_fields()) keys.push_back(f.key);
  keys.push_back("moe_flops");
  return keys;
}

CsvTable tidy_table(const FigureRuns& runs, const std::vector<std::string>& coords) {
  CsvTable t;
  t.header = coords;
  t.header.insert(t.header.end(), {"system", "status"});
  const std::vector<std::string> keys = field_keys();
  t.header.insert(t.header.end(), keys.begin(), keys.end());
  t.header.push_back("error");
  for (size_t p = 0; p < runs.points.size(); ++p) {
    for (const std::string& system : runs.systems) {
      std::vector<std::string> row;
      for (const auto& [name, value] : runs.points[p].coordinates) row.push_back(value);
      const RunCell* c = runs.cell(p, system);
      row.insert(row.end(), {system, run_status_name(c->status)});
      for (const auto& k : keys) row.push_back(csv_number(runs.value(p, system, k)));
      row.push_back(c->error);
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

// Mean, min and max of every field over the seeds of each (other coordinates, system).
CsvTable seed_table(const FigureRuns& runs, const std::vector<std::string>& coords) {
  CsvTable t;
  for (const auto& c : coords) {
    if (c != "seed") t.header.push_back(c);
  }
  t.header.insert(t.header.end(), {"system", "seeds"});
  const std::vector<std::string> keys = field_keys();
  for (const auto& k : keys) t.header.insert(t.header.end(), {k + "_mean", k + "_min", k + "_max"});
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> members;  // group -> (point, system)
  std::map<std::string, std::vector<std::string>> group_row;
  for (size_t p = 0; p < runs.points.size(); ++p) {
    for (const std::string& system : runs.systems) {
      std::vector<std::string> row;
      for (const auto& [name, value] : runs.points[p].coordinates) {
        if (name != "seed") row.push_back(value);
      }
      row.push_back(system);
      std::string id = fmt::format("{}", fmt::join(row, "\x1f"));
      add_unique(groups, id);
      members[id].emplace_back(p, system);
      group_row.emplace(id, row);
    }
  }
  for (const auto& id : groups) {
    std::vector<std::string> row = group_row.at(id);
    size_t ok = 0;
    for (const auto& [p, system] : members.at(id)) ok += runs.cell(p, system)->status == RunStatus::Ok;
    row.push_back(std::to_string(ok));
    for (const auto& k : keys) {
      std::vector<double> v;
      for (const auto& [p, system] : members.at(id)) {
        if (const auto x = runs.value(p, system, k)) v.push_back(*x);
      }
      const Spread s = spread(v);
      for (double x : {s.mean, s.low, s.high}) row.push_back(csv_number(s.n ? std::optional<double>(x) : std::nullopt));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string default_ylabel(const SweepPlot& p) {
  if (!p.speedup_over.empty()) return fmt::format("speedup over {} (x)", p.speedup_over);
  const ResultField* f = find_result_field(p.y);
  return f ? fmt::format("{} ({})", p.y, f->unit) : p.y;
}

// One drawn value of a run: the field, or the reference system's field over it.
std::optional<double> plotted(const FigureRuns& runs, const SweepPlot& p, size_t point, const std::string& system) {
  const std::optional<double> v = runs.value(point, system, p.y);
  if (!v || p.speedup_over.empty()) return v;
  const std::optional<double> ref = runs.value(point, p.speedup_over, p.y);
  if (!ref || *v == 0) return std::nullopt;
  return *ref / *v;
}

Plot sweep_plot(const SweepPlot& p, const FigureRuns& runs) {
  std::vector<std::string> panels, series, xs;
  for (size_t i = 0; i < runs.points.size(); ++i) {
    for (const std::string& system : p.systems) {
      add_unique(panels, p.panels.empty() ? "" : dimension_value(runs.points[i], system, p.panels));
      add_unique(series, dimension_value(runs.points[i], system, p.series));
      add_unique(xs, dimension_value(runs.points[i], system, p.x));
    }
  }
  Plot plot;
  plot.title = p.title.empty() ? fmt::format("{} against {}", p.speedup_over.empty() ? p.y : "speedup", p.x) : p.title;
  plot.columns = static_cast<int>(std::min<size_t>(panels.size(), 3));
  for (const std::string& panel : panels) {
    PlotPanel pp;
    pp.title = p.panels.empty() ? "" : fmt::format("{} = {}", p.panels, panel);
    pp.xlabel = p.xlabel.empty() ? p.x : p.xlabel;
    pp.ylabel = p.ylabel.empty() ? default_ylabel(p) : p.ylabel;
    pp.bars = p.kind == "bar";
    pp.logx = p.logx;
    pp.logy = p.logy;
    if (pp.bars) {
      pp.categories = xs;
    } else {
      for (const auto& x : xs) pp.x.push_back(std::stod(x));
    }
    for (const std::string& s : series) {
      PlotSeries ps;
      ps.title = p.series == "system" ? s : p.series + " = " + s;
      for (const std::string& x : xs) {
        std::vector<double> v;  // one per seed
        for (size_t i = 0; i < runs.points.size(); ++i) {
          for (const std::string& system : p.systems) {
            const SweepPoint& pt = runs.points[i];
            if (dimension_value(pt, system, p.x) != x || dimension_value(pt, system, p.series) != s) continue;
            if (!p.panels.empty() && dimension_value(pt, system, p.panels) != panel) continue;
            if (const auto y = plotted(runs, p, i, system)) v.push_back(*y);
          }
        }
        const Spread sp = spread(v);
        ps.y.push_back(sp.mean);
        ps.low.push_back(sp.n > 1 ? sp.low : kNaN);
        ps.high.push_back(sp.n > 1 ? sp.high : kNaN);
      }
      pp.series.push_back(std::move(ps));
    }
    plot.panels.push_back(std::move(pp));
  }
  return plot;
}

}  // namespace

void add_point_comparisons(FigureRuns& runs) {
  for (size_t p = 0; p < runs.points.size(); ++p) {
    const auto ok = [&](const std::string& system) -> const LayerResult* {
      const RunCell* c = runs.cell(p, system);
      return c && c->status == RunStatus::Ok ? &c->result : nullptr;
    };
    const LayerResult* moehub = ok("moehub");
    const LayerResult* ideal = ok("ideal");
    LayerResult moehub_copy = moehub ? *moehub : LayerResult{};
    LayerResult ideal_copy = ideal ? *ideal : LayerResult{};
    for (auto& c : runs.cells[p]) {
      if (c.status == RunStatus::Ok) c.result.compare(moehub ? &moehub_copy : nullptr, ideal ? &ideal_copy : nullptr);
    }
  }
}

SweepOutput build_sweep_output(const SweepFile& file, bool quick, const FigureRuns& runs) {
  SweepOutput out;
  const std::vector<std::string> coords = file.axes(quick).coordinate_names();
  out.csvs.emplace_back(file.name + ".csv", tidy_table(runs, coords));
  if (std::find(coords.begin(), coords.end(), "seed") != coords.end()) {
    out.csvs.emplace_back(file.name + "-seeds.csv", seed_table(runs, coords));
  }
  for (SweepPlot p : file.plots) {
    if (quick && !p.quick_title.empty()) p.title = p.quick_title;
    out.plots.emplace_back(file.name + "-" + p.name, sweep_plot(p, runs));
  }
  return out;
}

}  // namespace moehub
