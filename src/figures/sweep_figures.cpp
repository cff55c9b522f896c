// Figures 3, 4(b) and 12 to 17: one CSV row per (point, system) and the plot of the paper's figure.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "figures/figure_data.h"

namespace moehub {
namespace {

using Getter = std::function<std::optional<double>(size_t point, const std::string& system)>;

struct ExtraColumn {
  std::string name;
  Getter get;
};

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

// Points of each model, in sweep order.
std::vector<std::pair<std::string, std::vector<size_t>>> by_model(const FigureRuns& r) {
  std::vector<std::pair<std::string, std::vector<size_t>>> out;
  for (size_t p = 0; p < r.points.size(); ++p) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == r.points[p].model; });
    if (it == out.end()) {
      out.push_back({r.points[p].model, {}});
      it = out.end() - 1;
    }
    it->second.push_back(p);
  }
  return out;
}

CsvTable long_table(const FigureRuns& r, const std::vector<ExtraColumn>& extra) {
  CsvTable t;
  t.header = {"model", "gpus", "seq_length", "tokens", "imbalance_std", "system", "status",
              "layer_us", "e2e_ms", "routing_to_gemm1_us"};
  for (const auto& e : extra) t.header.push_back(e.name);
  for (size_t p = 0; p < r.points.size(); ++p) {
    const SweepPoint& pt = r.points[p];
    for (const auto& sys : r.systems) {
      std::vector<std::string> row{pt.model,
                                   std::to_string(pt.gpus),
                                   pt.seq_length ? std::to_string(pt.seq_length) : "",
                                   std::to_string(pt.tokens),
                                   fmt::format("{:g}", pt.imbalance),
                                   sys,
                                   run_status_name(r.cell(p, sys)->status),
                                   csv_number(r.value(p, sys, "layer_us")),
                                   csv_number(r.value(p, sys, "e2e_ms")),
                                   csv_number(r.value(p, sys, "routing_to_gemm1_us"))};
      for (const auto& e : extra) row.push_back(csv_number(e.get(p, sys)));
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

double nan_if_empty(std::optional<double> v) { return v ? *v : NAN; }

// "2.41x" per point where `speedup` has a value for `system`, "" elsewhere.
std::vector<std::string> speedup_labels(const std::vector<size_t>& points, const std::string& system, const Getter& speedup) {
  std::vector<std::string> out;
  for (size_t p : points) {
    const auto v = speedup(p, system);
    out.push_back(v ? fmt::format("{:.2f}x", *v) : "");
  }
  return out;
}

// What labels a bar figure's bars: its speedup getter (no value for unlabelled bars) and what
// the panel title says the labels are.
struct BarLabels {
  Getter speedup;
  std::string what;
};

// Clustered bars of `field` per model: one cluster per point, one bar per system with data;
// one panel per row, as wide as the page, so that many clusters and their labels fit.
Plot bar_plot(const FigureRuns& r, const std::string& field, const std::string& ylabel, const std::string& xlabel,
              const std::function<std::string(const SweepPoint&)>& category, const BarLabels& labels) {
  Plot plot;
  plot.title = r.spec->title;
  plot.columns = 1;
  plot.note = r.missing_note();
  for (const auto& [model, points] : by_model(r)) {
    PlotPanel panel;
    panel.title = labels.what.empty() ? model : model + " (labels: " + labels.what + ")";
    panel.bars = true;
    panel.ylabel = ylabel;
    panel.xlabel = xlabel;
    for (size_t p : points) panel.categories.push_back(category(r.points[p]));
    for (const auto& sys : r.systems_with_data()) {
      PlotSeries s;
      s.title = sys;
      for (size_t p : points) s.y.push_back(nan_if_empty(r.value(p, sys, field)));
      if (labels.speedup) s.labels = speedup_labels(points, sys, labels.speedup);
      panel.series.push_back(std::move(s));
    }
    plot.panels.push_back(std::move(panel));
  }
  return plot;
}

// Lines over a numeric axis: per model, the layer time and the speedup over the baseline, with
// MoE-Hub's speedup written at its points as the paper does.
Plot line_plot(const FigureRuns& r, const std::function<double(const SweepPoint&)>& x, const std::string& xlabel,
               bool logx, const Getter& speedup) {
  Plot plot;
  plot.title = r.spec->title;
  plot.columns = 2;
  plot.note = r.missing_note();
  for (const auto& [model, points] : by_model(r)) {
    PlotPanel layer, gain;
    layer.title = model + ": MoE layer time";
    layer.ylabel = "layer time (us)";
    gain.title = model + ": speedup over " + r.spec->baseline;
    gain.ylabel = "speedup over " + r.spec->baseline + " (x)";
    layer.xlabel = gain.xlabel = xlabel;
    layer.logx = gain.logx = logx;
    layer.logy = logx;
    for (size_t p : points) layer.x.push_back(x(r.points[p]));
    gain.x = layer.x;
    for (const auto& sys : r.systems_with_data()) {
      PlotSeries l, g;
      l.title = g.title = sys;
      for (size_t p : points) {
        l.y.push_back(nan_if_empty(r.value(p, sys, "layer_us")));
        g.y.push_back(nan_if_empty(speedup(p, sys)));
        // Over seeds (random routing), the layer time's min and max as error bars.
        if (const auto range = r.spread(p, sys, "layer_us")) {
          l.low.resize(l.y.size() - 1, std::nan(""));
          l.high.resize(l.y.size() - 1, std::nan(""));
          l.low.push_back(range->first);
          l.high.push_back(range->second);
        }
      }
      if (!l.low.empty()) {
        l.low.resize(l.y.size(), std::nan(""));
        l.high.resize(l.y.size(), std::nan(""));
      }
      if (sys == "moehub") {
        g.labels = speedup_labels(points, sys, speedup);
        gain.title += " (top row: moehub's)";
      }
      layer.series.push_back(std::move(l));
      gain.series.push_back(std::move(g));
    }
    plot.panels.push_back(std::move(layer));
    plot.panels.push_back(std::move(gain));
  }
  return plot;
}

// The point of the same model (and tokens, imbalance) with the fewest GPUs: Fig. 17's 1x.
std::optional<size_t> scaling_base(const FigureRuns& r, size_t p) {
  std::optional<size_t> base;
  for (size_t q = 0; q < r.points.size(); ++q) {
    const SweepPoint &a = r.points[p], &b = r.points[q];
    if (a.model != b.model || a.tokens != b.tokens || a.imbalance != b.imbalance) continue;
    if (!base || b.gpus < r.points[*base].gpus) base = q;
  }
  return base;
}

// Parts of the critical GPU's timeline (result_fields(): "breakdown_us.<activity>").
std::optional<double> parts(const FigureRuns& r, size_t p, const std::string& s, std::initializer_list<const char*> names) {
  double sum = 0;
  for (const char* n : names) {
    const auto v = r.value(p, s, std::string("breakdown_us.") + n);
    if (!v) return std::nullopt;
    sum += *v;
  }
  return sum;
}

// a - b of two times in us, to the picosecond they are counted in (no rounding residue).
std::optional<double> minus(std::optional<double> a, std::optional<double> b) {
  return a && b ? std::optional<double>(std::round((*a - *b) * 1e6) / 1e6) : std::nullopt;
}

// One panel per point: a stacked bar per system (ideal left out) of the `series` getters.
Plot stacked_plot(const FigureRuns& r, const std::string& ylabel, const std::vector<ExtraColumn>& series) {
  Plot plot;
  plot.title = r.spec->title;
  plot.columns = static_cast<int>(std::min<size_t>(r.points.size(), 3));
  plot.note = r.missing_note();
  for (size_t p = 0; p < r.points.size(); ++p) {
    PlotPanel panel;
    panel.title = fmt::format("{}, {} GPUs, {} tokens", r.points[p].model, r.points[p].gpus, r.points[p].tokens);
    panel.bars = panel.stacked = true;
    panel.ylabel = ylabel;
    std::vector<std::string> systems;
    for (const auto& s : r.systems_with_data()) {
      if (s != "ideal") systems.push_back(s);
    }
    panel.categories = systems;
    for (const auto& e : series) {
      PlotSeries ps;
      ps.title = e.name;
      for (const auto& s : systems) ps.y.push_back(nan_if_empty(e.get(p, s)));
      panel.series.push_back(std::move(ps));
    }
    plot.panels.push_back(std::move(panel));
  }
  return plot;
}

// Fig. 3: each system's gap to the ideal layer, split into software scheduling overhead (data
// shuffles, synchronisation, host-bound launches, polling beyond the ideal layer's), exposed
// communication, and what remains (compute that differs from the ideal layer's).
FigureOutput gap_to_ideal(const FigureSpec& spec, const FigureRuns& r) {
  const Getter layer = [&r](size_t p, const std::string& s) { return r.value(p, s, "layer_us"); };
  const Getter gap = [&r](size_t p, const std::string& s) {
    return minus(r.value(p, s, "layer_us"), r.value(p, "ideal", "layer_us"));
  };
  const Getter scheduling = [&r](size_t p, const std::string& s) {
    const auto sched = [&](const std::string& x) {
      return parts(r, p, x, {"data_shuffles", "synchronisation", "launches", "polling"});
    };
    return minus(sched(s), sched("ideal"));
  };
  const Getter exposed = [&r](size_t p, const std::string& s) {
    return minus(parts(r, p, s, {"exposed_communication"}), parts(r, p, "ideal", {"exposed_communication"}));
  };
  const Getter other = [=](size_t p, const std::string& s) { return minus(minus(gap(p, s), scheduling(p, s)), exposed(p, s)); };
  const Getter share = [=](size_t p, const std::string& s) -> std::optional<double> {
    const auto a = scheduling(p, s), b = exposed(p, s), t = layer(p, s);
    if (!a || !b || !t || *t <= 0) return std::nullopt;
    return (*a + *b) / *t;
  };
  FigureOutput out;
  out.csvs.push_back({spec.name + ".csv", long_table(r, {{"gap_to_ideal_us", gap},
                                                         {"scheduling_overhead_us", scheduling},
                                                         {"exposed_communication_us", exposed},
                                                         {"other_gap_us", other},
                                                         {"overhead_share_of_layer", share}})});
  out.plot = stacked_plot(r, "gap to the ideal layer (us)",
                          {{"software scheduling", scheduling}, {"exposed communication", exposed}, {"other (compute)", other}});
  return out;
}

// Fig. 4(b): the address-resolution phase of each system as its critical GPU spends it:
// synchronisation (count exchange, buffer sizing), data shuffles (permutes, sorts) and the host
// (CPU layout, launches: the GPU idles until the host issues the next kernel).
FigureOutput address_resolution(const FigureSpec& spec, const FigureRuns& r) {
  const auto part = [&r](const char* name) {
    return Getter([&r, name](size_t p, const std::string& s) { return parts(r, p, s, {name}); });
  };
  const Getter sync = part("synchronisation"), shuffles = part("data_shuffles"), host = part("launches");
  const Getter share = [=, &r](size_t p, const std::string& s) -> std::optional<double> {
    const auto t = r.value(p, s, "layer_us");
    const auto a = sync(p, s), b = shuffles(p, s), c = host(p, s);
    if (!a || !b || !c || !t || *t <= 0) return std::nullopt;
    return (*a + *b + *c) / *t;
  };
  FigureOutput out;
  out.csvs.push_back({spec.name + ".csv", long_table(r, {{"synchronisation_us", sync},
                                                         {"data_shuffles_us", shuffles},
                                                         {"host_layout_and_launch_us", host},
                                                         {"resolution_share_of_layer", share}})});
  out.plot = stacked_plot(r, "time on the critical GPU (us)",
                          {{"synchronisation", sync}, {"data shuffles", shuffles}, {"host: CPU layout, launches", host}});
  return out;
}

// Fig. 17: FLOPS per system over GPU counts, normalised to its own run at the fewest GPUs.
FigureOutput scaling_figure(const FigureSpec& spec, const FigureRuns& r) {
  FigureOutput out;
  const Getter tflops = [&r](size_t p, const std::string& s) -> std::optional<double> {
    const auto t = r.value(p, s, "layer_us");
    const auto f = r.value(p, s, "moe_flops");
    if (!t || !f || *t <= 0) return std::nullopt;
    return *f / (*t * 1e-6) / 1e12;
  };
  const Getter normalised = [&r, tflops](size_t p, const std::string& s) -> std::optional<double> {
    const auto base = scaling_base(r, p);
    return base ? ratio(tflops(p, s), tflops(*base, s)) : std::nullopt;
  };
  const Getter ideal = [&r](size_t p, const std::string&) -> std::optional<double> {
    const auto base = scaling_base(r, p);
    if (!base) return std::nullopt;
    return static_cast<double>(r.points[p].gpus) / static_cast<double>(r.points[*base].gpus);
  };
  out.csvs.push_back({spec.name + ".csv", long_table(r, {{"moe_tflops", tflops},
                                                         {"normalised_flops", normalised},
                                                         {"ideal_scaling", ideal}})});
  Plot plot;
  plot.title = spec.title;
  plot.columns = 2;
  plot.note = r.missing_note();
  for (const auto& [model, points] : by_model(r)) {
    PlotPanel panel;
    panel.title = model;
    panel.xlabel = "GPU count (x the smallest run)";
    panel.ylabel = "FLOPS over the smallest run's (x)";
    for (size_t p : points) panel.x.push_back(nan_if_empty(ideal(p, "")));
    for (const auto& sys : r.systems_with_data()) {
      PlotSeries s;
      s.title = sys;
      for (size_t p : points) s.y.push_back(nan_if_empty(normalised(p, sys)));
      panel.series.push_back(std::move(s));
    }
    PlotSeries ideal_line;
    ideal_line.title = "ideal scaling";
    ideal_line.y = panel.x;
    ideal_line.dashed = true;
    panel.series.push_back(std::move(ideal_line));
    plot.panels.push_back(std::move(panel));
  }
  out.plot = std::move(plot);
  return out;
}

// MoE-Hub's (`of`'s) speedup over the fastest other system at a point, ideal left out.
Getter over_fastest(const FigureRuns& r, const std::string& of, const std::string& field) {
  return [&r, of, field](size_t p, const std::string& s) -> std::optional<double> {
    if (s != of) return std::nullopt;
    std::optional<double> best;
    for (const auto& o : r.systems) {
      if (o == of || o == "ideal") continue;
      const auto v = r.value(p, o, field);
      if (v && (!best || *v < *best)) best = v;
    }
    return ratio(best, r.value(p, of, field));
  };
}

// Fig. 15's labels (paper caption): what packet management, signalling and both gain over MH-Base.
Getter over_mh_base(const FigureRuns& r, const std::string& field) {
  return [&r, field](size_t p, const std::string& s) -> std::optional<double> {
    if (s != "mh-pkt" && s != "mh-dep" && s != "moehub") return std::nullopt;
    return ratio(r.value(p, "mh-base", field), r.value(p, s, field));
  };
}

// Figs. 12 and 16: end-to-end latency bars; the CSV gives each system's time over `of`'s.
FigureOutput end_to_end(const FigureSpec& spec, const FigureRuns& r) {
  FigureOutput out;
  const std::string of = spec.speedup_of.empty() ? "moehub" : spec.speedup_of;
  const std::vector<ExtraColumn> extra{
      {of + "_speedup_layer", [&](size_t p, const std::string& s) { return ratio(r.value(p, s, "layer_us"), r.value(p, of, "layer_us")); }},
      {of + "_speedup_e2e", [&](size_t p, const std::string& s) { return ratio(r.value(p, s, "e2e_ms"), r.value(p, of, "e2e_ms")); }},
      {"fraction_of_ideal", [&](size_t p, const std::string& s) { return ratio(r.value(p, "ideal", "layer_us"), r.value(p, s, "layer_us")); }}};
  out.csvs.push_back({spec.name + ".csv", long_table(r, extra)});
  if (spec.kind == "fig12") {
    out.plot = bar_plot(r, "e2e_ms", "end-to-end latency (ms)", "GPUs x sequence length (tokens per GPU)",
                        [](const SweepPoint& p) {
                          return p.seq_length ? fmt::format("{} x {}", p.gpus, p.seq_length)
                                              : fmt::format("{} GPUs, {} tokens", p.gpus, p.tokens);
                        },
                        {});
  } else {
    out.plot = bar_plot(r, "e2e_ms", "end-to-end latency (ms)", "GPUs",
                        [](const SweepPoint& p) { return std::to_string(p.gpus); },
                        {over_fastest(r, of, "e2e_ms"), of + " over the fastest other system"});
  }
  return out;
}

}  // namespace

FigureOutput build_sweep_figure(const FigureSpec& spec, const FigureRuns& r) {
  FigureOutput out;
  const std::string& k = spec.kind;
  if (k == "fig3") return gap_to_ideal(spec, r);
  if (k == "fig4b") return address_resolution(spec, r);
  if (k == "fig12" || k == "fig16") return end_to_end(spec, r);
  if (k == "fig13" || k == "fig14") {
    const std::string base = spec.baseline;
    const Getter speedup = [&r, base](size_t p, const std::string& s) {
      return ratio(r.value(p, base, "layer_us"), r.value(p, s, "layer_us"));
    };
    out.csvs.push_back({spec.name + ".csv", long_table(r, {{"speedup_over_" + base, speedup}})});
    if (k == "fig13") {
      out.plot = line_plot(r, [](const SweepPoint& p) { return static_cast<double>(p.tokens); },
                           "tokens (total, all GPUs)", true, speedup);
    } else {
      out.plot = line_plot(r, [](const SweepPoint& p) { return p.imbalance; },
                           "imbalance: std of the per-expert token fraction", false, speedup);
    }
  } else if (k == "fig15") {
    const std::string base = spec.baseline;
    const Getter speedup = [&r, base](size_t p, const std::string& s) {
      return ratio(r.value(p, base, "routing_to_gemm1_us"), r.value(p, s, "routing_to_gemm1_us"));
    };
    out.csvs.push_back({spec.name + ".csv", long_table(r, {{"speedup_over_" + base, speedup}})});
    out.plot = bar_plot(r, "routing_to_gemm1_us", "routing to end of GEMM1 (us)", "tokens (total, all GPUs)",
                        [](const SweepPoint& p) { return std::to_string(p.tokens); },
                        {over_mh_base(r, "routing_to_gemm1_us"), "speedup over mh-base"});
  } else if (k == "fig17") {
    out = scaling_figure(spec, r);
  } else {
    throw std::logic_error("no builder for figure kind " + k);
  }
  return out;
}

}  // namespace moehub
