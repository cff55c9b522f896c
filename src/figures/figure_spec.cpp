#include "figures/figure_spec.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <toml++/toml.h>

#include "platform/layer_result.h"
#include "figures/toml_reader.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

// A figure's sweep names the model, GPUs, tokens and systems of every point.
void check_complete(const TomlReader& r, const SweepAxes& a, const std::string& context) {
  const auto need = [&](bool ok, const char* what) {
    if (!ok) throw UserError(r.file().string(), fmt::format("{}: missing '{}'", context, what));
  };
  need(!a.models.empty(), "models");
  need(!a.gpus.empty(), "gpus");
  need(!a.tokens.empty() || !a.seq_lengths.empty(), "tokens or seq_lengths");
  need(!a.systems.empty(), "systems");
}

Headline read_headline(const TomlReader& r, const toml::table& t, size_t index) {
  const std::string ctx = fmt::format("headline[{}]", index);
  r.only_keys(t, {"name", "section", "paper", "figure", "field", "pairs", "tokens", "explanation"}, ctx);
  Headline h;
  h.name = r.string(t, "name", ctx, true);
  h.section = r.string(t, "section", ctx, true);
  h.paper = r.number(t, "paper", ctx);
  h.figure = r.string(t, "figure", ctx, true);
  h.field = r.string(t, "field", ctx, true);
  if (!find_result_field(h.field)) {
    std::string known;
    for (const ResultField& f : result_fields()) known += (known.empty() ? "" : ", ") + f.key;
    throw UserError(r.file().string(), fmt::format("{}.field: '{}' is not a result field ({})", ctx, h.field, known));
  }
  h.explanation = r.string(t, "explanation", ctx, false);
  const toml::node* pairs = t.get("pairs");
  if (!pairs) throw UserError(r.file().string(), ctx + ": missing 'pairs'");
  for (const auto& p : r.array(*pairs, ctx + ".pairs")) {
    const toml::array* a = p.as_array();
    if (!a || a->size() != 2 || !(*a)[0].is_string() || !(*a)[1].is_string()) {
      throw UserError(r.where(p), ctx + ".pairs: expected [\"system\", \"system\"] pairs");
    }
    h.pairs.emplace_back(*(*a)[0].value<std::string>(), *(*a)[1].value<std::string>());
  }
  if (const toml::node* range = t.get("tokens")) {
    const std::vector<int64_t> v = r.positive_integers(*range, ctx + ".tokens");
    if (v.size() != 2 || v[0] > v[1]) throw UserError(r.where(*range), ctx + ".tokens: expected [min, max]");
    h.token_range = std::make_pair(v[0], v[1]);
  }
  return h;
}

}  // namespace

const std::vector<std::string>& figure_kinds() {
  static const std::vector<std::string> kinds{"fig3", "fig4b", "fig5", "fig6", "fig12", "fig13", "fig14", "fig15", "fig16", "fig17", "sweep", "table", "area"};
  return kinds;
}

const std::vector<std::string>& figure_sections() {
  static const std::vector<std::string> sections{"figure", "sweep", "headline", "table_i"};
  return sections;
}

const SweepAxes& FigureSpec::axes(bool quick_subset) const {
  if (!sweep) throw std::logic_error("figure " + name + " has no sweep");
  return quick_subset ? *quick : *sweep;
}

std::vector<SweepPoint> FigureSpec::points(bool quick_subset) const {
  if (!sweep) return {};
  return sweep_points(axes(quick_subset), file.string() + ": sweep");
}

std::vector<std::string> FigureSpec::depends_on() const {
  std::vector<std::string> out;
  for (const auto& h : headlines) {
    if (std::find(out.begin(), out.end(), h.figure) == out.end()) out.push_back(h.figure);
  }
  return out;
}

bool is_figure_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;  // the caller's usual "no such file" error follows
  return parse_toml_file(file).get("figure") != nullptr;
}

FigureSpec load_figure_spec(const fs::path& file) {
  const toml::table t = parse_toml_file(file);
  const TomlReader r(file);
  FigureSpec s;
  s.name = file.stem().string();
  s.file = file;
  const toml::table* fig = t["figure"].as_table();
  if (!fig) throw UserError(file.string(), "no [figure] table: not a figure file");
  s.description = t["description"].value_or(std::string());
  // Parameters go in sweep.set, so that every value a run uses is visible in the sweep.
  for (const auto& [k, n] : t) {
    const std::string key(k.str());
    const auto& sections = figure_sections();
    if (key == "description" || key == "source" ||
        std::find(sections.begin(), sections.end(), key) != sections.end()) {
      continue;
    }
    throw UserError(r.where(n), fmt::format("'{}': a figure file holds only description, source, [figure], "
                                                "[sweep], [[headline]] and [[table_i]]; set parameters with "
                                                "sweep.set = [\"KEY=VALUE\"]",
                                                key));
  }
  s.kind = r.string(*fig, "kind", "figure", true);
  const auto& kinds = figure_kinds();
  if (s.kind == "sweep") {
    throw UserError(r.where(*fig->get("kind")),
                    "figure.kind: 'sweep' is a sweep file's kind: drop the [figure] table and draw with [[plot]]s");
  }
  if (std::find(kinds.begin(), kinds.end(), s.kind) == kinds.end()) {
    throw UserError(r.where(*fig->get("kind")),
                    fmt::format("figure.kind: unknown kind '{}' (known: {})", s.kind, fmt::join(kinds, ", ")));
  }
  s.title = r.string(*fig, "title", "figure", false);
  s.baseline = r.string(*fig, "baseline", "figure", false);
  s.speedup_of = r.string(*fig, "speedup_of", "figure", false);
  s.hardware = r.string(*fig, "hardware", "figure", false);
  r.only_keys(*fig, {"kind", "title", "baseline", "speedup_of", "hardware"}, "figure");

  if (const toml::node* sweep = t.get("sweep")) {
    const toml::table* st = sweep->as_table();
    if (!st) throw UserError(r.where(*sweep), "sweep: expected a table");
    SweepAxes full;
    read_sweep_axes(r, *st, "sweep", full);
    check_complete(r, full, "sweep");
    SweepAxes quick = full;
    if (const toml::node* q = st->get("quick")) {
      if (!q->as_table()) throw UserError(r.where(*q), "sweep.quick: expected a table");
      read_sweep_axes(r, *q->as_table(), "sweep.quick", quick);
    }
    s.sweep = std::move(full);
    s.quick = std::move(quick);
  }
  const bool needs_sweep = s.kind != "table" && s.kind != "area";
  if (needs_sweep && !s.sweep) throw UserError(file.string(), fmt::format("kind '{}' needs a [sweep]", s.kind));
  if (!needs_sweep && s.sweep) throw UserError(file.string(), fmt::format("kind '{}' takes no [sweep]", s.kind));

  if (const toml::node* hs = t.get("headline")) {
    const toml::array* a = hs->as_array();
    if (!a) throw UserError(r.where(*hs), "headline: expected [[headline]] tables");
    for (const auto& h : *a) {
      if (!h.as_table()) throw UserError(r.where(h), "headline: expected [[headline]] tables");
      s.headlines.push_back(read_headline(r, *h.as_table(), s.headlines.size()));
    }
  }
  if (const toml::node* ts = t.get("table_i")) {
    const toml::array* a = ts->as_array();
    if (!a) throw UserError(r.where(*ts), "table_i: expected [[table_i]] tables");
    for (const auto& e : *a) {
      if (!e.as_table()) throw UserError(r.where(e), "table_i: expected [[table_i]] tables");
      const std::string ctx = fmt::format("table_i[{}]", s.table_i.size());
      s.table_i.push_back({r.string(*e.as_table(), "system", ctx, true), r.string(*e.as_table(), "scheduling", ctx, true),
                           r.string(*e.as_table(), "communication", ctx, true)});
    }
  }
  if (s.kind != "table" && (!s.headlines.empty() || !s.table_i.empty())) {
    throw UserError(file.string(), "[[headline]] and [[table_i]] belong in a figure of kind 'table'");
  }
  if (s.kind == "area" && s.hardware.empty()) s.hardware = "dgx-h800";
  return s;
}

FigureSpec sweep_figure_spec(const SweepFile& sweep) {
  FigureSpec s;
  s.name = sweep.name;
  s.file = sweep.file;
  s.kind = "sweep";
  s.title = sweep.description.empty() ? sweep.name : sweep.description;
  s.description = sweep.description;
  s.sweep = sweep.sweep;
  s.quick = sweep.quick;
  s.plots = sweep.plots;
  return s;
}

SweepFile sweep_file_of(const FigureSpec& spec) {
  if (spec.kind != "sweep" || !spec.sweep) throw std::logic_error("figure " + spec.name + " is not a sweep file");
  SweepFile f;
  f.name = spec.name;
  f.file = spec.file;
  f.description = spec.description;
  f.sweep = *spec.sweep;
  f.quick = *spec.quick;
  f.plots = spec.plots;
  return f;
}

std::vector<FigureSpec> load_figure_specs(const fs::path& dir) {
  std::vector<FigureSpec> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UserError("--experiments", fmt::format("'{}' is not a directory", dir.string()));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".toml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (is_figure_file(f)) {
      out.push_back(load_figure_spec(f));
    } else if (is_sweep_file(f)) {
      out.push_back(sweep_figure_spec(load_sweep_file(f)));
    }
  }
  // The paper's order: the figures, Section VII's sweeps, then the table, then the area.
  const auto rank = [](const FigureSpec& s) {
    const auto& k = figure_kinds();
    return std::find(k.begin(), k.end(), s.kind) - k.begin();
  };
  std::stable_sort(out.begin(), out.end(), [&](const FigureSpec& a, const FigureSpec& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace moehub
