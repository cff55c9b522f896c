#include "figures/sweep_file.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "figures/figure_spec.h"
#include "figures/toml_reader.h"
#include "platform/layer_result.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_number(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size();
}

// Distinct values of each coordinate over the points.
std::vector<std::pair<std::string, std::set<std::string>>> coordinate_values(const std::vector<SweepPoint>& points) {
  std::vector<std::pair<std::string, std::set<std::string>>> out;
  for (const SweepPoint& p : points) {
    for (size_t i = 0; i < p.coordinates.size(); ++i) {
      if (out.size() <= i) out.emplace_back(p.coordinates[i].first, std::set<std::string>{});
      out[i].second.insert(p.coordinates[i].second);
    }
  }
  return out;
}

SweepPlot read_plot(const TomlReader& r, const toml::table& t, const std::string& ctx) {
  r.only_keys(t, {"name", "kind", "title", "quick_title", "x", "y", "series", "panels", "speedup_over", "systems", "xlabel", "ylabel",
                  "logx", "logy"},
              ctx);
  SweepPlot p;
  p.origin = r.where(t);
  p.name = r.string(t, "name", ctx, true);
  if (p.name.empty() || p.name.find_first_of("/\\ ") != std::string::npos) {
    throw UserError(p.origin, ctx + ".name: expected a file stem without spaces or slashes");
  }
  if (const std::string kind = r.string(t, "kind", ctx, false); !kind.empty()) p.kind = kind;
  if (p.kind != "line" && p.kind != "bar") {
    throw UserError(p.origin, fmt::format("{}.kind: '{}' is not line or bar", ctx, p.kind));
  }
  p.title = r.string(t, "title", ctx, false);
  p.quick_title = r.string(t, "quick_title", ctx, false);
  p.x = r.string(t, "x", ctx, true);
  p.y = r.string(t, "y", ctx, true);
  if (const std::string s = r.string(t, "series", ctx, false); !s.empty()) p.series = s;
  p.panels = r.string(t, "panels", ctx, false);
  p.speedup_over = r.string(t, "speedup_over", ctx, false);
  if (const toml::node* s = t.get("systems")) p.systems = r.strings(*s, ctx + ".systems");
  p.xlabel = r.string(t, "xlabel", ctx, false);
  p.ylabel = r.string(t, "ylabel", ctx, false);
  p.logx = r.boolean(t, "logx", ctx, false);
  p.logy = r.boolean(t, "logy", ctx, false);
  return p;
}

// The plot names what the sweep has, and pins every other axis to one value.
void check_plot(SweepPlot& p, const SweepAxes& axes, const std::vector<SweepPoint>& points, const std::string& ctx) {
  const auto fail = [&](const std::string& what) { throw UserError(p.origin, ctx + what); };
  if (!find_result_field(p.y)) {
    std::vector<std::string> known;
    for (const ResultField& f : result_fields()) known.push_back(f.key);
    fail(fmt::format(".y: '{}' is not a result field ({})", p.y, fmt::join(known, ", ")));
  }
  const auto values = coordinate_values(points);
  std::vector<std::string> names{"system"};
  for (const auto& [name, v] : values) names.push_back(name);
  for (const auto& [key, axis] : {std::pair{".x", &p.x}, {".series", &p.series}, {".panels", &p.panels}}) {
    if (!axis->empty() && !contains(names, *axis)) {
      fail(fmt::format("{}: '{}' is not an axis of the sweep ({})", key, *axis, fmt::join(names, ", ")));
    }
  }
  if (!p.speedup_over.empty() && !contains(axes.systems, p.speedup_over)) {
    fail(fmt::format(".speedup_over: '{}' is not one of the sweep's systems", p.speedup_over));
  }
  for (const auto& s : p.systems) {
    if (!contains(axes.systems, s)) fail(fmt::format(".systems: '{}' is not one of the sweep's systems", s));
  }
  if (p.systems.empty()) {
    for (const auto& s : axes.systems) {
      if (s != p.speedup_over) p.systems.push_back(s);
    }
  }
  const auto drawn_itself = [&](const std::string& axis) { return axis == p.x || axis == p.series || axis == p.panels; };
  // An axis zipped with a drawn one takes its values along.
  const auto drawn = [&](const std::string& axis) {
    if (drawn_itself(axis)) return true;
    for (const SweepGroup& g : axes.zipped) {
      const auto in = [&](const std::string& path) {
        return std::any_of(g.axes.begin(), g.axes.end(), [&](const SweepAxis& a) { return a.path == path; });
      };
      if (in(axis) && std::any_of(g.axes.begin(), g.axes.end(), [&](const SweepAxis& a) { return drawn_itself(a.path); })) {
        return true;
      }
    }
    return false;
  };
  if (!drawn("system") && p.systems.size() != 1) {
    fail(fmt::format(": {} systems but 'system' is not the x axis, the series or the panels; pick one with systems = [...]",
                     p.systems.size()));
  }
  for (const auto& [name, v] : values) {
    if (!drawn(name) && name != "seed" && v.size() > 1) {
      fail(fmt::format(": axis '{}' has {} values but is not the x axis, the series or the panels", name, v.size()));
    }
    if (name == p.x && p.kind == "line") {
      for (const auto& text : v) {
        if (!is_number(text)) fail(fmt::format(".x: '{}' = '{}' is not a number; use kind = \"bar\"", name, text));
      }
    }
  }
  if (p.x == "system" && p.kind == "line") fail(".x: 'system' needs kind = \"bar\"");
}

void read_plots(const TomlReader& r, const toml::table& t, SweepFile& s) {
  const toml::node* n = t.get("plot");
  if (!n) return;
  const toml::array* a = n->as_array();
  if (!a) throw UserError(r.where(*n), "plot: expected [[plot]] tables");
  for (const auto& e : *a) {
    const std::string ctx = fmt::format("plot[{}]", s.plots.size());
    if (!e.as_table()) throw UserError(r.where(e), ctx + ": expected a table");
    SweepPlot p = read_plot(r, *e.as_table(), ctx);
    for (const SweepPlot& q : s.plots) {
      if (q.name == p.name) throw UserError(p.origin, fmt::format("{}.name: '{}' is used twice", ctx, p.name));
    }
    SweepPlot quick = p;
    check_plot(p, s.sweep, s.points(false), ctx);
    check_plot(quick, s.quick, s.points(true), ctx + " (with [sweep.quick])");
    s.plots.push_back(std::move(p));
  }
}

}  // namespace

bool is_sweep_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  const toml::table t = parse_toml_file(file);
  return t.get("sweep") != nullptr && t.get("figure") == nullptr;
}

void require_registered_systems(const SweepFile& sweep) {
  require_registered_systems(sweep.sweep, sweep.quick, sweep.file.string());
}

std::vector<SweepPoint> SweepFile::points(bool quick_subset) const {
  return sweep_points(axes(quick_subset), file.string() + ": sweep");
}

SweepFile load_sweep_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw UserError(file.string(), "no such file");
  SweepFile s;
  s.name = file.stem().string();
  s.file = file;
  if (is_figure_file(file)) {
    const FigureSpec f = load_figure_spec(file);
    if (!f.has_sweep()) throw UserError(file.string(), fmt::format("figure kind '{}' has no [sweep]", f.kind));
    s.description = f.description;
    s.sweep = *f.sweep;
    s.quick = *f.quick;
    return s;
  }
  const toml::table t = parse_toml_file(file);
  const TomlReader r(file);
  r.only_keys(t, {"description", "source", "sweep", "plot"}, "sweep file");
  s.description = r.string(t, "description", "sweep file", false);
  const toml::node* sweep = t.get("sweep");
  if (!sweep || !sweep->as_table()) throw UserError(file.string(), "no [sweep] table");
  read_sweep_axes(r, *sweep->as_table(), "sweep", s.sweep);
  if (s.sweep.systems.empty()) throw UserError(file.string(), "sweep: missing 'systems'");
  s.quick = s.sweep;
  if (const toml::node* q = sweep->as_table()->get("quick")) {
    if (!q->as_table()) throw UserError(r.where(*q), "sweep.quick: expected a table");
    read_sweep_axes(r, *q->as_table(), "sweep.quick", s.quick);
  }
  read_plots(r, t, s);
  return s;
}

}  // namespace moehub
