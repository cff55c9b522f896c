// Figures 3, 4(b) and 12 to 17: one CSV row per (point, system) and the plot of the paper's figure.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "figures/figure_data.h"
#include "moe/model_shape.h"
#include "moe/placement.h"
#include "moe/workload.h"

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

// A MoE-Hub variant's own statistic (results[].stats.hub), e.g. {"dispatch_latency", "producer_us"}.
const nlohmann::json* hub_stats(const FigureRuns& r, size_t p, const std::string& s) {
  const RunCell* c = r.cell(p, s);
  if (!c || c->status != RunStatus::Ok || !c->result.stats.is_object()) return nullptr;
  const auto it = c->result.stats.find("hub");
  return it == c->result.stats.end() ? nullptr : &*it;
}

std::optional<double> hub_stat(const FigureRuns& r, size_t p, const std::string& s, const char* section, const char* key) {
  const nlohmann::json* h = hub_stats(r, p, s);
  if (!h || !h->contains(section) || !(*h)[section].contains(key) || !(*h)[section][key].is_number()) return std::nullopt;
  return (*h)[section][key].get<double>();
}

// Per consumer GPU, a number of results[].stats.hub.dispatch_latency (e.g. "last_row_landed_us").
std::vector<double> per_consumer(const FigureRuns& r, size_t p, const std::string& s, const char* key) {
  std::vector<double> out;
  const nlohmann::json* h = hub_stats(r, p, s);
  if (!h || !h->contains("dispatch_latency") || !(*h)["dispatch_latency"].contains(key)) return out;
  for (const auto& v : (*h)["dispatch_latency"][key]) out.push_back(v.is_number() ? v.get<double>() : NAN);
  return out;
}

// GPU 0's share of the experts as the run placed them: the effective workload.expert_map
// (an axis, sweep.set or a preset), else the contiguous split.
double gpu0_expert_share(const ConfigSource& configs, const SweepPoint& pt) {
  const Config config = configs.build(pt.settings);
  const WorkloadConfig w = WorkloadConfig::from(config);
  const int64_t experts = ModelShape::from(config).experts();
  const ExpertPlacement placement = ExpertPlacement::from_map_or_contiguous(w.expert_map, experts, w.gpus);
  return static_cast<double>(placement.local_experts(0).size()) / static_cast<double>(experts);
}

// Fig. 5: producer-side congestion. GPU 0 is the hot consumer (it holds more of the experts);
// without the RPM every producer's stores leave through one FIFO, with it through one partition
// per peer. When GPU 0's link is the bottleneck, do the other consumers' rows still arrive at
// their own pace? Per point and system: when GPU 0's rows landed against the other GPUs' (the
// last row, and the mean over rows; results[].stats.hub.dispatch_latency).
FigureOutput congestion_figure(const FigureSpec& spec, const FigureRuns& r, const ConfigSource& configs) {
  std::vector<double> shares;
  for (const SweepPoint& pt : r.points) shares.push_back(gpu0_expert_share(configs, pt));
  const Getter share = [shares](size_t p, const std::string&) -> std::optional<double> { return shares[p]; };
  // GPU 0's value, or the mean over the other GPUs, of a per-consumer statistic.
  const auto side = [&r](const char* key, bool gpu0) {
    return Getter([&r, key, gpu0](size_t p, const std::string& s) -> std::optional<double> {
      const auto v = per_consumer(r, p, s, key);
      if (v.size() < 2) return std::nullopt;
      if (gpu0) return std::isnan(v[0]) ? std::nullopt : std::optional<double>(v[0]);
      double sum = 0;
      for (size_t g = 1; g < v.size(); ++g) sum += v[g];
      return std::isnan(sum) ? std::nullopt : std::optional<double>(sum / static_cast<double>(v.size() - 1));
    });
  };
  const Getter hot_last = side("last_row_landed_us", true), cold_last = side("last_row_landed_us", false);
  const Getter hot_mean = side("mean_row_landed_us", true), cold_mean = side("mean_row_landed_us", false);
  FigureOutput out;
  out.csvs.push_back({spec.name + ".csv", long_table(r, {{"gpu0_expert_share", share},
                                                         {"gpu0_last_row_us", hot_last},
                                                         {"others_last_row_us", cold_last},
                                                         {"gpu0_mean_row_us", hot_mean},
                                                         {"others_mean_row_us", cold_mean},
                                                         {"others_over_gpu0_last", [=](size_t p, const std::string& s) {
                                                            return ratio(cold_last(p, s), hot_last(p, s));
                                                          }},
                                                         {"dispatch_GBps", [&r](size_t p, const std::string& s) {
                                                            return r.value(p, s, "dispatch_GBps");
                                                          }}})});
  Plot plot;
  plot.title = spec.title;
  plot.columns = 2;
  plot.note = r.missing_note();
  for (const auto& [model, points] : by_model(r)) {
    PlotPanel last, mean;
    last.title = model + ": when a consumer's last row landed";
    mean.title = model + ": when a consumer's rows landed, mean over rows";
    last.ylabel = mean.ylabel = "time from the layer's start (us)";
    last.xlabel = mean.xlabel = "GPU 0's share of the experts (%)";
    for (size_t p : points) last.x.push_back(100.0 * shares[p]);
    mean.x = last.x;
    for (const auto& sys : r.systems_with_data()) {
      for (const bool gpu0 : {true, false}) {
        PlotSeries a, b;
        a.title = b.title = sys + (gpu0 ? ": GPU 0 (hot)" : ": other GPUs (mean)");
        for (size_t p : points) {
          a.y.push_back(nan_if_empty((gpu0 ? hot_last : cold_last)(p, sys)));
          b.y.push_back(nan_if_empty((gpu0 ? hot_mean : cold_mean)(p, sys)));
        }
        last.series.push_back(std::move(a));
        mean.series.push_back(std::move(b));
      }
    }
    plot.panels.push_back(std::move(last));
    plot.panels.push_back(std::move(mean));
  }
  out.plot = std::move(plot);
  return out;
}

// Fig. 6: where a dispatched row's communication time goes (results[].stats.hub.dispatch_latency,
// means over rows): the producer side (issue to landed) and the consumer side (landed to its tile
// complete, then until a block of the tile may start: the poll that sees it or the DAM's
// release); the wait for a free SM after that is compute backlog and stays out of the shares.
// Besides, polling's share of the GEMM1 blocks' SM time.
FigureOutput dispatch_latency_figure(const FigureSpec& spec, const FigureRuns& r) {
  const auto part = [&r](const char* key) {
    return Getter([&r, key](size_t p, const std::string& s) { return hub_stat(r, p, s, "dispatch_latency", key); });
  };
  const Getter producer = part("producer_us"), assembly = part("tile_assembly_us"), start = part("signal_us");
  const auto share_of = [=](const Getter& g) {
    return Getter([=](size_t p, const std::string& s) -> std::optional<double> {
      const auto a = producer(p, s), b = assembly(p, s), c = start(p, s), x = g(p, s);
      if (!a || !b || !c || !x || *a + *b + *c <= 0) return std::nullopt;
      return 100.0 * *x / (*a + *b + *c);
    });
  };
  const Getter consumer = [=](size_t p, const std::string& s) -> std::optional<double> {
    const auto b = assembly(p, s), c = start(p, s);
    return b && c ? std::optional<double>(*b + *c) : std::nullopt;
  };
  const Getter polls = [&r](size_t p, const std::string& s) -> std::optional<double> {
    const nlohmann::json* h = hub_stats(r, p, s);
    return h && h->contains("polls") ? std::optional<double>((*h)["polls"].get<double>()) : std::nullopt;
  };
  FigureOutput out;
  out.csvs.push_back({spec.name + ".csv", long_table(r, {{"producer_us", producer},
                                                         {"tile_assembly_us", assembly},
                                                         {"signal_us", start},
                                                         {"sm_wait_us", part("sm_wait_us")},
                                                         {"producer_share_pct", share_of(producer)},
                                                         {"consumer_share_pct", share_of(consumer)},
                                                         {"gemm1_polling_block_us", part("gemm1_polling_block_us")},
                                                         {"gemm1_compute_block_us", part("gemm1_compute_block_us")},
                                                         {"gemm1_polling_share", part("gemm1_polling_share")},
                                                         {"polls", polls}})});
  out.plot = stacked_plot(r, "share of a row's dispatch latency (%)",
                          {{"producer: issue to landed", share_of(producer)},
                           {"consumer: waiting for the tile's other rows", share_of(assembly)},
                           {"consumer: tile complete until a block sees it (poll or DAM)", share_of(start)}});
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

FigureOutput build_sweep_figure(const FigureSpec& spec, const FigureRuns& r, const ConfigSource& configs) {
  FigureOutput out;
  const std::string& k = spec.kind;
  if (k == "fig3") return gap_to_ideal(spec, r);
  if (k == "fig4b") return address_resolution(spec, r);
  if (k == "fig5") return congestion_figure(spec, r, configs);
  if (k == "fig6") return dispatch_latency_figure(spec, r);
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
