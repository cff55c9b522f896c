#include "figures/table_figure.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "hub/area_model.h"
#include "hub/hub_config.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

std::string pairs_text(const Headline& h) {
  std::vector<std::string> parts;
  for (const auto& [a, b] : h.pairs) parts.push_back(a + "/" + b);
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

std::optional<double> HeadlineValue::difference() const {
  if (!ours || headline->paper == 0) return std::nullopt;
  return (*ours - headline->paper) / headline->paper;
}

bool HeadlineValue::beyond(double tolerance) const {
  const auto d = difference();
  return d && std::abs(*d) > tolerance;
}

std::vector<HeadlineValue> compute_headlines(const FigureSpec& table, const FigureContext& context) {
  std::vector<HeadlineValue> out;
  for (const Headline& h : table.headlines) {
    HeadlineValue v;
    v.headline = &h;
    const auto it = context.runs.find(h.figure);
    if (it != context.runs.end()) {
      const FigureRuns& r = it->second;
      double sum = 0;
      for (size_t p = 0; p < r.points.size(); ++p) {
        const int64_t tokens = r.points[p].tokens;
        if (h.token_range && (tokens < h.token_range->first || tokens > h.token_range->second)) continue;
        for (const auto& [num, den] : h.pairs) {
          const auto a = r.value(p, num, h.field);
          const auto b = r.value(p, den, h.field);
          if (!a || !b || *b <= 0) continue;
          sum += *a / *b;
          ++v.samples;
        }
      }
      if (v.samples) v.ours = sum / static_cast<double>(v.samples);
    }
    out.push_back(v);
  }
  return out;
}

size_t count_code_lines(const std::string& source) {
  size_t lines = 0;
  bool in_block = false;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) {
    bool code = false;
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      const char next = i + 1 < line.size() ? line[i + 1] : '\0';
      if (in_block) {
        if (c == '*' && next == '/') {
          in_block = false;
          ++i;
        }
        continue;
      }
      if (quote) {
        if (c == '\\') {
          ++i;
        } else if (c == quote) {
          quote = 0;
        }
        continue;
      }
      if (c == '/' && next == '/') break;
      if (c == '/' && next == '*') {
        in_block = true;
        ++i;
        continue;
      }
      if (c == '"' || c == '\'') quote = c;
      if (!std::isspace(static_cast<unsigned char>(c))) code = true;
    }
    if (code) ++lines;
  }
  return lines;
}

std::vector<fs::path> system_source_files(const fs::path& dir, const std::string& name) {
  std::string stem = name;
  std::replace(stem.begin(), stem.end(), '-', '_');
  std::vector<fs::path> out;
  std::error_code ec;
  // Each system's code lives in its own folder (src/systems/<stem>/); the hub wiring beside it
  // (hub_*) models hardware, not the system's software, and is not counted.
  const fs::path folder = dir / stem;
  if (dir.empty() || !fs::is_directory(folder, ec)) return out;
  for (const auto& e : fs::directory_iterator(folder)) {
    const fs::path& p = e.path();
    const std::string ext = p.extension().string();
    const std::string base = p.stem().string();
    if ((ext == ".cpp" || ext == ".h") && (base == stem || base.rfind(stem + "_", 0) == 0)) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

FigureOutput build_table_figure(const FigureSpec& spec, const FigureContext& context) {
  FigureOutput out;
  const std::vector<HeadlineValue> values = compute_headlines(spec, context);
  CsvTable t;
  t.header = {"index", "headline", "section", "figure", "field", "pairs", "paper", "ours", "samples",
              "difference_pct", "beyond_15pct", "explanation"};
  Plot plot;
  plot.title = spec.title;
  PlotPanel panel;
  panel.bars = true;
  panel.title = "headline values (numbered as in table.csv)";
  panel.xlabel = "headline (# in the table and table.csv)";
  panel.ylabel = "headline value (ratio, x)";
  PlotSeries paper, ours;
  paper.title = "paper";
  ours.title = "this simulator";
  std::vector<std::string> not_computed;
  for (size_t i = 0; i < values.size(); ++i) {
    const HeadlineValue& v = values[i];
    const Headline& h = *v.headline;
    const auto diff = v.difference();
    t.rows.push_back({std::to_string(i + 1), h.name, h.section, h.figure, h.field, pairs_text(h),
                      csv_number(h.paper), csv_number(v.ours), std::to_string(v.samples),
                      diff ? fmt::format("{:.1f}", 100.0 * *diff) : "", v.ours ? (v.beyond(kHeadlineTolerance) ? "yes" : "no") : "",
                      h.explanation});
    panel.categories.push_back(std::to_string(i + 1));
    paper.y.push_back(h.paper);
    ours.y.push_back(v.ours ? *v.ours : NAN);
    if (!v.ours) not_computed.push_back(std::to_string(i + 1));
  }
  panel.series = {paper, ours};
  plot.panels.push_back(std::move(panel));
  if (!not_computed.empty()) {
    plot.note = fmt::format("not computed (systems not implemented): {}", fmt::join(not_computed, ", "));
  }
  out.csvs.push_back({spec.name + ".csv", std::move(t)});

  // Table I style: code of each system in this project beside the paper's counts.
  CsvTable loc;
  loc.header = {"system", "files", "code_lines", "paper_scheduling_host_device", "paper_communication_host_device"};
  std::vector<std::string> systems = context.registered_systems;
  for (const auto& e : spec.table_i) {
    if (std::find(systems.begin(), systems.end(), e.system) == systems.end()) systems.push_back(e.system);
  }
  for (const auto& name : systems) {
    const bool registered =
        std::find(context.registered_systems.begin(), context.registered_systems.end(), name) !=
        context.registered_systems.end();
    const auto files = system_source_files(context.systems_source_dir, name);
    size_t lines = 0;
    std::vector<std::string> file_names;
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream ss;
      ss << in.rdbuf();
      lines += count_code_lines(ss.str());
      file_names.push_back(f.filename().string());
    }
    std::string sched, comm;
    for (const auto& e : spec.table_i) {
      if (e.system == name) {
        sched = e.scheduling;
        comm = e.communication;
      }
    }
    const bool have_count = registered && !files.empty();
    loc.rows.push_back({name, have_count ? fmt::format("{}", fmt::join(file_names, " ")) : (registered ? "" : "not implemented"),
                        have_count ? std::to_string(lines) : "", sched, comm});
  }
  out.csvs.push_back({spec.name + "_loc.csv", std::move(loc)});
  out.plot = std::move(plot);
  return out;
}

FigureOutput build_area_figure(const FigureSpec& spec, const FigureContext& context) {
  FigureOutput out;
  const Config cfg = context.configs->build({{"run.hardware", spec.hardware, spec.file.string() + ": figure.hardware"}});
  const AreaEstimate e = estimate_area(HubConfig::from(cfg));
  CsvTable t;
  t.header = {"structure", "cell", "entries", "bits_per_entry", "bits", "mm2", "fields"};
  // Storage and logic in colours of their own: one bar per structure, stacked on nothing.
  PlotPanel panel;
  panel.bars = panel.stacked = true;
  panel.title = fmt::format("{} ({} nm, {:.1f} Mbit/mm^2 SRAM)", spec.hardware, e.technology_nm, e.sram_mbit_per_mm2);
  panel.xlabel = "hub structure";
  panel.ylabel = "area (mm^2)";
  PlotSeries storage, logic;
  storage.title = "storage (this estimate)";
  logic.title = "logic (this estimate)";
  for (const AreaItem& it : e.items) {
    t.rows.push_back({it.structure, storage_cell_name(it.cell), std::to_string(it.entries),
                      std::to_string(it.bits_per_entry), std::to_string(it.bits()), fmt::format("{:.6f}", it.mm2),
                      it.fields});
    panel.categories.push_back(it.structure);
    storage.y.push_back(it.mm2);
    logic.y.push_back(NAN);
  }
  t.rows.push_back({"storage total", "", "", "", std::to_string(e.total_bits), fmt::format("{:.6f}", e.total_mm2),
                    fmt::format("{:.4f} % of the die", 100.0 * e.die_fraction)});
  // Logic blocks: `entries` holds their copies, `fields` what one copy holds (docs/hub.md 5.2).
  for (const LogicItem& it : e.logic) {
    t.rows.push_back({it.block, "logic", std::to_string(it.copies), "", "", fmt::format("{:.6f}", it.mm2), it.formula});
    panel.categories.push_back(it.block);
    storage.y.push_back(NAN);
    logic.y.push_back(it.mm2);
  }
  t.rows.push_back({"logic total", "logic", "", "", "", fmt::format("{:.6f}", e.logic_mm2),
                    fmt::format("{:.0f} NAND2 equivalents at {:.0f} % placement utilization", e.logic_nand2_eq,
                                100.0 * e.logic_utilization)});
  t.rows.push_back({"total", "", "", "", "", fmt::format("{:.6f}", e.storage_and_logic_mm2),
                    fmt::format("{:.4f} % of the die", 100.0 * e.storage_and_logic_die_fraction)});
  t.rows.push_back({"paper (VI-E, storage and logic)", "", "", "", "", fmt::format("{:.6f}", kPaperHubAreaMm2),
                    fmt::format("{} nm", kPaperHubAreaNodeNm)});
  panel.series = {std::move(storage), std::move(logic)};
  Plot plot;
  plot.title = spec.title;
  plot.panels.push_back(std::move(panel));
  plot.note = fmt::format("storage {:.4f} + logic {:.4f} = {:.4f} mm^2; paper VI-E: {:.2f} mm^2 at {} nm (docs/hub.md 5.3)",
                          e.total_mm2, e.logic_mm2, e.storage_and_logic_mm2, kPaperHubAreaMm2, kPaperHubAreaNodeNm);
  out.csvs.push_back({spec.name + ".csv", std::move(t)});
  out.plot = std::move(plot);
  return out;
}

}  // namespace moehub
