#include "figures/results_markdown.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <sstream>

#include "figures/table_figure.h"

namespace moehub {
namespace {

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string md_table(const CsvTable& t) {
  std::ostringstream md;
  md << "|";
  for (const auto& h : t.header) md << " " << cell(h) << " |";
  md << "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& r : t.rows) {
    md << "|";
    for (const auto& c : r) md << " " << cell(c) << " |";
    md << "\n";
  }
  return md.str();
}

// The columns of `t` named in `names`, in that order (a name `t` lacks is left out).
CsvTable select_columns(const CsvTable& t, const std::vector<std::string>& names) {
  std::vector<size_t> keep;
  CsvTable out;
  for (const auto& n : names) {
    const auto it = std::find(t.header.begin(), t.header.end(), n);
    if (it == t.header.end()) continue;
    keep.push_back(static_cast<size_t>(it - t.header.begin()));
    out.header.push_back(n);
  }
  for (const auto& row : t.rows) {
    auto& r = out.rows.emplace_back();
    for (size_t c : keep) r.push_back(row[c]);
  }
  return out;
}

// The motivation figures' numbers beside what the paper's text says of them (sections II-C, III).
struct MotivationSection {
  const char* kind;
  const char* heading;  // "## <heading> (<figure>, paper <paper>)"
  const char* paper;
  const char* text;
  std::vector<std::string> columns;
};

const std::vector<MotivationSection>& motivation_section_list() {
  static const std::vector<MotivationSection> list{
      {"fig3", "Gap to the ideal layer", "Fig. 3",
       "Paper (II-C2): software scheduling overhead and exposed communication \"account for over 24% of "
       "the total MoE layer time, even in highly optimized implementations\". Ours: "
       "`overhead_share_of_layer` = (scheduling overhead + exposed communication) / layer time, from the "
       "critical GPU's timeline less the ideal layer's (docs/figures.md).",
       {"tokens", "system", "layer_us", "gap_to_ideal_us", "scheduling_overhead_us", "exposed_communication_us",
        "other_gap_us", "overhead_share_of_layer"}},
      {"fig4b", "Address-resolution phase", "Fig. 4(b)",
       "Paper (III-A): the routing result is in hand but rows wait for synchronisation, shuffles and a "
       "CPU-driven layout; the paper profiles this phase without numbers in its text. Ours, on the critical "
       "GPU:",
       {"tokens", "system", "layer_us", "synchronisation_us", "data_shuffles_us", "host_layout_and_launch_us",
        "resolution_share_of_layer"}},
      {"fig5", "One hot consumer", "Fig. 5",
       "Paper (III-B): congestion on a hot consumer's link \"creates backpressure to the producer GPU, which "
       "in turn impedes data transmission to other consumers\"; the RPM's per-peer partitions and round-robin "
       "emission are to keep the other links busy (IV-B2). Ours: GPU 0 holds `gpu0_expert_share` of the "
       "experts; when its rows landed against the other GPUs' (docs/hub.md):",
       {"tokens", "system", "gpu0_expert_share", "gpu0_last_row_us", "others_last_row_us", "gpu0_mean_row_us",
        "others_mean_row_us", "others_over_gpu0_last"}},
      {"fig6", "Producer and consumer shares of the dispatch latency", "Fig. 6",
       "Paper (III-B): polling \"can consume a significant portion of consumer execution\". Ours, mean over "
       "rows: the producer side (issue to landed) and the consumer side (waiting for the tile's other rows, "
       "then for a poll or the DAM to release it; `sm_wait_us`, the wait for a free SM after that, is compute "
       "backlog and not in the shares); `gemm1_polling_share`: GEMM1 blocks' SM time spent polling "
       "(docs/hub.md):",
       {"model", "tokens", "system", "producer_us", "tile_assembly_us", "signal_us", "sm_wait_us",
        "producer_share_pct", "consumer_share_pct", "gemm1_polling_share"}}};
  return list;
}

void motivation_sections(std::ostringstream& md, const std::vector<WrittenFigure>& figures) {
  for (const auto& f : figures) {
    for (const MotivationSection& m : motivation_section_list()) {
      if (f.spec->kind != m.kind) continue;
      md << "\n## " << m.heading << " (" << f.spec->name << ", paper " << m.paper << ")\n\n"
         << m.text << "\n\n"
         << md_table(select_columns(f.output.csvs.at(0).second, m.columns));
    }
  }
}

// A plot's values as drawn: one row per (panel, x), one column per series.
CsvTable plot_table(const Plot& plot) {
  CsvTable t;
  const bool panels = plot.panels.size() > 1;
  for (const PlotPanel& panel : plot.panels) {
    if (t.header.empty()) {
      if (panels) t.header.push_back("panel");
      t.header.push_back(panel.xlabel);
      for (const PlotSeries& s : panel.series) t.header.push_back(s.title);
    }
    const size_t n = panel.bars ? panel.categories.size() : panel.x.size();
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> row;
      if (panels) row.push_back(panel.title);
      row.push_back(panel.bars ? panel.categories[i] : fmt::format("{:g}", panel.x[i]));
      for (const PlotSeries& s : panel.series) {
        row.push_back(i < s.y.size() ? csv_number(s.y[i]) : std::string());
      }
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

// A coordinate written with 17 significant digits (sweep_spec's imbalance: 0.0040000000000000001)
// in its shortest form that reads back to the same double (0.004); any other text unchanged.
std::string shortest_number(const std::string& v) {
  double d = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || end != v.data() + v.size()) return v;
  return fmt::format("{:.17g}", d) == v ? fmt::format("{}", d) : v;
}

// The values each coordinate of a sweep's tidy CSV (the columns before "system") takes, in
// first-appearance order: "model = a; tokens in 256, 512".
std::string sweep_coordinates(const CsvTable& t) {
  std::vector<std::string> parts;
  for (size_t c = 0; c < t.header.size() && t.header[c] != "system"; ++c) {
    std::vector<std::string> values;
    for (const auto& row : t.rows) {
      const std::string v = shortest_number(row[c]);
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    parts.push_back(fmt::format("{} {} {}", t.header[c], values.size() == 1 ? "=" : "in", fmt::join(values, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Sweep files (kind "sweep"): the points run, each plot's axes in words, then its values as drawn.
void sweep_sections(std::ostringstream& md, const std::vector<WrittenFigure>& figures) {
  for (const auto& f : figures) {
    if (f.spec->kind != "sweep") continue;
    md << "\n## " << f.spec->title << " (" << f.spec->name << ")\n\n"
       << "A sweep file (configs/experiments/" << f.spec->file.filename().string() << "); every run's result fields are in "
       << f.output.csvs.at(0).first << ". Points run: " << sweep_coordinates(f.output.csvs.at(0).second) << ".\n";
    for (const auto& [stem, plot] : f.output.plots) {
      if (plot.panels.empty()) continue;
      const PlotPanel& first = plot.panels.front();
      std::vector<std::string> series;
      for (const PlotSeries& s : first.series) series.push_back(s.title);
      md << "\n`" << stem << "`: " << plot.title << ". " << first.ylabel << " against " << first.xlabel << ", "
         << (first.bars ? "clustered bars" : "lines") << " for " << fmt::format("{}", fmt::join(series, ", "));
      if (plot.panels.size() > 1) {
        std::vector<std::string> titles;
        for (const PlotPanel& p : plot.panels) titles.push_back(p.title);
        md << "; one panel each for " << fmt::format("{}", fmt::join(titles, ", "));
      }
      md << ". The values drawn:\n\n" << md_table(plot_table(plot));
    }
  }
}

std::string fmt_value(std::optional<double> v) { return v ? fmt::format("{:.3f}", *v) : "not computed"; }

}  // namespace

std::string results_markdown(const std::vector<WrittenFigure>& figures, const FigureContext& context,
                             const std::string& link_prefix, bool quick) {
  std::ostringstream md;
  md << "# Results\n\n";
  md << "Generated by `moehub figures` from the experiment files in `configs/experiments/`"
     << (quick ? " with `--quick` (a subset of every sweep)" : " (full sweeps)")
     << ".\nRegenerate rather than edit (`moehub figures --out DIR --results-md FILE`); each figure's data is\n"
        "in its CSV beside the images, and docs/figures.md says how every number is computed.\n"
        "Paper values are quoted for comparison only.\n\n";

  for (const auto& f : figures) {
    if (f.spec->kind != "table") continue;
    const std::vector<HeadlineValue> values = compute_headlines(*f.spec, context);
    md << "## Headlines (" << f.spec->name << ")\n\n";
    md << "Each value is the mean, over the figure's points and the listed system pairs, of "
          "field(first) / field(second).\n\n";
    md << "| # | headline | paper section | paper | this simulator | difference | samples |\n"
          "|---|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& v = values[i];
      const auto d = v.difference();
      md << fmt::format("| {} | {} | {} | {:.3f} | {} | {} | {} |\n", i + 1, cell(v.headline->name),
                        v.headline->section, v.headline->paper, fmt_value(v.ours),
                        d ? fmt::format("{:+.1f} %", 100.0 * *d) : "", v.samples);
    }
    md << fmt::format("\n### Differences beyond {:.0f} %\n\n", 100.0 * kHeadlineTolerance);
    md << "The mechanism behind each difference, written by people in the headline's `explanation` "
          "(configs/experiments/" << f.spec->name << ".toml); an empty cell has not been explained yet.\n\n";
    std::ostringstream rows;
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& v = values[i];
      if (!v.beyond(kHeadlineTolerance)) continue;
      rows << fmt::format("| {} | {} | {:.3f} | {:.3f} | {:+.1f} % | {} |\n", i + 1, cell(v.headline->name),
                          v.headline->paper, *v.ours, 100.0 * *v.difference(), cell(v.headline->explanation));
    }
    if (rows.str().empty()) {
      md << "None of the computed headlines differs by more than the tolerance.\n";
    } else {
      md << "| # | headline | paper | this simulator | difference | mechanism |\n|---|---|---|---|---|---|\n"
         << rows.str();
    }
    std::vector<std::string> missing;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].ours) missing.push_back(std::to_string(i + 1));
    }
    if (!missing.empty()) {
      md << fmt::format("\nNot computed (their systems are not implemented or did not run): {}.\n",
                        fmt::join(missing, ", "));
    }
    for (const auto& [file, table] : f.output.csvs) {
      if (file == f.spec->name + "_loc.csv") {
        md << "\n## Coding effort (Table I style)\n\n"
              "`code_lines`: lines of this project's src/systems/<name>/<name>.{cpp,h} and <name>_*.{cpp,h} "
              "('-' read as '_') that hold code, comments and blank lines excluded; the shared kernels, "
              "cluster and network are not counted. The paper's columns count scheduling and "
              "communication code of the original systems (Table I).\n\n"
           << md_table(table);
      }
    }
  }
  motivation_sections(md, figures);
  sweep_sections(md, figures);
  for (const auto& f : figures) {
    if (f.spec->kind != "area") continue;
    md << "\n## Hardware overhead (" << f.spec->name << ")\n\n" << md_table(f.output.csvs.at(0).second);
  }
  md << "\n## Figures\n";
  for (const auto& f : figures) {
    md << "\n### " << f.spec->name << ": " << f.spec->title << "\n\n";
    if (f.output.plot) md << fmt::format("![{}]({}{}.svg)\n\n", f.spec->name, link_prefix, f.spec->name);
    for (const auto& [stem, plot] : f.output.plots) md << fmt::format("![{}]({}{}.svg)\n\n", stem, link_prefix, stem);
    std::vector<std::string> links;
    for (const auto& [file, table] : f.output.csvs) links.push_back(fmt::format("[{}]({}{})", file, link_prefix, file));
    md << "Data: " << fmt::format("{}", fmt::join(links, ", ")) << ".";
    if (!f.note.empty()) md << " Systems without results: " << f.note << ".";
    md << "\n";
  }
  return md.str();
}

}  // namespace moehub
