// Figures 12 to 17: one CSV row per (point, system) and the plot of the paper's figure.

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

// Clustered bars of `field` per model: one cluster per point, one bar per system with data.
Plot bar_plot(const FigureRuns& r, const std::string& field, const std::string& ylabel,
              const std::function<std::string(const SweepPoint&)>& category, int columns) {
  Plot plot;
  plot.title = r.spec->title;
  plot.columns = columns;
  plot.note = r.missing_note();
  for (const auto& [model, points] : by_model(r)) {
    PlotPanel panel;
    panel.title = model;
    panel.bars = true;
    panel.ylabel = ylabel;
    for (size_t p : points) panel.categories.push_back(category(r.points[p]));
    for (const auto& sys : r.systems_with_data()) {
      PlotSeries s{sys, {}, false};
      for (size_t p : points) s.y.push_back(nan_if_empty(r.value(p, sys, field)));
      panel.series.push_back(std::move(s));
    }
    plot.panels.push_back(std::move(panel));
  }
  return plot;
}

// Lines over a numeric axis: per model, the layer time and the speedup over the baseline.
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
    gain.ylabel = "speedup (x)";
    layer.xlabel = gain.xlabel = xlabel;
    layer.logx = gain.logx = logx;
    layer.logy = logx;
    for (size_t p : points) layer.x.push_back(x(r.points[p]));
    gain.x = layer.x;
    for (const auto& sys : r.systems_with_data()) {
      PlotSeries l{sys, {}, false}, g{sys, {}, false};
      for (size_t p : points) {
        l.y.push_back(nan_if_empty(r.value(p, sys, "layer_us")));
        g.y.push_back(nan_if_empty(speedup(p, sys)));
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

}  // namespace

FigureOutput build_sweep_figure(const FigureSpec& spec, const FigureRuns& r) {
  FigureOutput out;
  const std::string& k = spec.kind;
  if (k == "fig12" || k == "fig16") {
    const std::string of = spec.speedup_of.empty() ? "moehub" : spec.speedup_of;
    const std::vector<ExtraColumn> extra{
        {of + "_speedup_layer", [&](size_t p, const std::string& s) { return ratio(r.value(p, s, "layer_us"), r.value(p, of, "layer_us")); }},
        {of + "_speedup_e2e", [&](size_t p, const std::string& s) { return ratio(r.value(p, s, "e2e_ms"), r.value(p, of, "e2e_ms")); }},
        {"fraction_of_ideal", [&](size_t p, const std::string& s) { return ratio(r.value(p, "ideal", "layer_us"), r.value(p, s, "layer_us")); }}};
    out.csvs.push_back({spec.name + ".csv", long_table(r, extra)});
    if (k == "fig12") {
      out.plot = bar_plot(r, "e2e_ms", "end-to-end latency (ms)", [](const SweepPoint& p) {
        return p.seq_length ? fmt::format("{} GPUs x {}", p.gpus, p.seq_length) : fmt::format("{} GPUs, {}", p.gpus, p.tokens);
      }, 3);
    } else {
      out.plot = bar_plot(r, "e2e_ms", "end-to-end latency (ms)",
                          [](const SweepPoint& p) { return fmt::format("{} GPUs", p.gpus); }, 2);
    }
  } else if (k == "fig13" || k == "fig14") {
    const std::string base = spec.baseline;
    const Getter speedup = [&r, base](size_t p, const std::string& s) {
      return ratio(r.value(p, base, "layer_us"), r.value(p, s, "layer_us"));
    };
    out.csvs.push_back({spec.name + ".csv", long_table(r, {{"speedup_over_" + base, speedup}})});
    if (k == "fig13") {
      out.plot = line_plot(r, [](const SweepPoint& p) { return static_cast<double>(p.tokens); }, "total tokens", true,
                           speedup);
    } else {
      out.plot = line_plot(r, [](const SweepPoint& p) { return p.imbalance; }, "std of the per-expert token fraction",
                           false, speedup);
    }
  } else if (k == "fig15") {
    const std::string base = spec.baseline;
    const Getter speedup = [&r, base](size_t p, const std::string& s) {
      return ratio(r.value(p, base, "routing_to_gemm1_us"), r.value(p, s, "routing_to_gemm1_us"));
    };
    out.csvs.push_back({spec.name + ".csv", long_table(r, {{"speedup_over_" + base, speedup}})});
    out.plot = bar_plot(r, "routing_to_gemm1_us", "routing to end of GEMM1 (us)",
                        [](const SweepPoint& p) { return fmt::format("{} tokens", p.tokens); }, 3);
  } else if (k == "fig17") {
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
      panel.xlabel = "GPU scaling (x the smallest count)";
      panel.ylabel = "normalised FLOPS";
      for (size_t p : points) panel.x.push_back(nan_if_empty(ideal(p, "")));
      for (const auto& sys : r.systems_with_data()) {
        PlotSeries s{sys, {}, false};
        for (size_t p : points) s.y.push_back(nan_if_empty(normalised(p, sys)));
        panel.series.push_back(std::move(s));
      }
      panel.series.push_back(PlotSeries{"ideal scaling", panel.x, true});
      plot.panels.push_back(std::move(panel));
    }
    out.plot = std::move(plot);
  } else {
    throw std::logic_error("no builder for figure kind " + k);
  }
  return out;
}

}  // namespace moehub
