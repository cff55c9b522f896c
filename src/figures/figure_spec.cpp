#include "figures/figure_spec.h"

#include <algorithm>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "platform/layer_result.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

toml::table parse(const fs::path& file) {
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& err) {
    throw UserError(fmt::format("{}:{}", file.string(), err.source().begin.line), std::string(err.description()));
  }
}

std::string where(const fs::path& file, const toml::node& n) {
  return fmt::format("{}:{}", file.string(), n.source().begin.line);
}

// Reads the typed sections of one figure file, naming file:line in every error.
class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  std::string string(const toml::table& t, const char* key, const std::string& context, bool required) const {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) throw UserError(file_.string(), fmt::format("{}: missing '{}'", context, key));
      return {};
    }
    if (!n->is_string()) throw UserError(where(file_, *n), fmt::format("{}.{}: expected a string", context, key));
    return *n->value<std::string>();
  }

  double number(const toml::table& t, const char* key, const std::string& context) const {
    const toml::node* n = t.get(key);
    if (!n) throw UserError(file_.string(), fmt::format("{}: missing '{}'", context, key));
    if (!n->is_number()) throw UserError(where(file_, *n), fmt::format("{}.{}: expected a number", context, key));
    return *n->value<double>();
  }

  const toml::array& array(const toml::node& n, const std::string& key) const {
    const toml::array* a = n.as_array();
    if (!a) throw UserError(where(file_, n), fmt::format("{}: expected an array", key));
    if (a->empty()) throw UserError(where(file_, n), fmt::format("{}: empty", key));
    return *a;
  }

  std::vector<std::string> strings(const toml::node& n, const std::string& key) const {
    std::vector<std::string> out;
    for (const auto& e : array(n, key)) {
      if (!e.is_string()) throw UserError(where(file_, e), fmt::format("{}: expected strings", key));
      out.push_back(*e.value<std::string>());
    }
    return out;
  }

  std::vector<int64_t> positive_integers(const toml::node& n, const std::string& key) const {
    std::vector<int64_t> out;
    for (const auto& e : array(n, key)) {
      if (!e.is_integer() || *e.value<int64_t>() < 1) {
        throw UserError(where(file_, e), fmt::format("{}: expected positive integers", key));
      }
      out.push_back(*e.value<int64_t>());
    }
    return out;
  }

  std::vector<double> numbers(const toml::node& n, const std::string& key) const {
    std::vector<double> out;
    for (const auto& e : array(n, key)) {
      if (!e.is_number()) throw UserError(where(file_, e), fmt::format("{}: expected numbers", key));
      out.push_back(*e.value<double>());
    }
    return out;
  }

  // Applies the keys of a [sweep] (or [sweep.quick]) table over `axes`.
  void axes(const toml::table& t, const std::string& context, SweepAxes& axes) const {
    for (const auto& [k, n] : t) {
      const std::string key(k.str());
      const std::string path = context + "." + key;
      if (key == "quick" && context == "sweep") continue;
      if (key == "models") {
        axes.models = strings(n, path);
      } else if (key == "gpus") {
        axes.gpus = positive_integers(n, path);
      } else if (key == "tokens") {
        axes.tokens = positive_integers(n, path);
        axes.seq_lengths.clear();
      } else if (key == "seq_lengths") {
        axes.seq_lengths = positive_integers(n, path);
        axes.tokens.clear();
      } else if (key == "imbalance") {
        axes.imbalance = numbers(n, path);
      } else if (key == "systems") {
        axes.systems = strings(n, path);
      } else if (key == "set") {
        axes.settings.clear();
        for (const auto& e : array(n, path)) {
          const auto text = e.value<std::string>();
          const size_t eq = text ? text->find('=') : std::string::npos;
          if (!text || eq == std::string::npos || eq == 0) {
            throw UserError(where(file_, e), fmt::format("{}: expected \"KEY=VALUE\" strings", path));
          }
          axes.settings.push_back({text->substr(0, eq), text->substr(eq + 1), where(file_, e)});
        }
      } else {
        throw UserError(where(file_, n), fmt::format("unknown sweep key '{}' (known: models, gpus, tokens, "
                                                     "seq_lengths, imbalance, systems, set, quick)",
                                                     path));
      }
    }
  }

  void check_complete(const SweepAxes& a, const std::string& context) const {
    const auto need = [&](bool ok, const char* what) {
      if (!ok) throw UserError(file_.string(), fmt::format("{}: missing '{}'", context, what));
    };
    need(!a.models.empty(), "models");
    need(!a.gpus.empty(), "gpus");
    need(!a.tokens.empty() || !a.seq_lengths.empty(), "tokens or seq_lengths");
    need(!a.systems.empty(), "systems");
  }

  Headline headline(const toml::table& t, size_t index) const {
    const std::string ctx = fmt::format("headline[{}]", index);
    Headline h;
    h.name = string(t, "name", ctx, true);
    h.section = string(t, "section", ctx, true);
    h.paper = number(t, "paper", ctx);
    h.figure = string(t, "figure", ctx, true);
    h.field = string(t, "field", ctx, true);
    if (!find_result_field(h.field)) {
      std::string known;
      for (const ResultField& f : result_fields()) known += (known.empty() ? "" : ", ") + f.key;
      throw UserError(file_.string(), fmt::format("{}.field: '{}' is not a result field ({})", ctx, h.field, known));
    }
    h.explanation = string(t, "explanation", ctx, false);
    const toml::node* pairs = t.get("pairs");
    if (!pairs) throw UserError(file_.string(), ctx + ": missing 'pairs'");
    for (const auto& p : array(*pairs, ctx + ".pairs")) {
      const toml::array* a = p.as_array();
      if (!a || a->size() != 2 || !(*a)[0].is_string() || !(*a)[1].is_string()) {
        throw UserError(where(file_, p), ctx + ".pairs: expected [\"system\", \"system\"] pairs");
      }
      h.pairs.emplace_back(*(*a)[0].value<std::string>(), *(*a)[1].value<std::string>());
    }
    if (const toml::node* r = t.get("tokens")) {
      const std::vector<int64_t> v = positive_integers(*r, ctx + ".tokens");
      if (v.size() != 2 || v[0] > v[1]) throw UserError(where(file_, *r), ctx + ".tokens: expected [min, max]");
      h.token_range = std::make_pair(v[0], v[1]);
    }
    for (const auto& [k, n] : t) {
      static const std::vector<std::string> known{"name",  "section", "paper",  "figure",
                                                  "field", "pairs",   "tokens", "explanation"};
      if (std::find(known.begin(), known.end(), std::string(k.str())) == known.end()) {
        throw UserError(where(file_, n), fmt::format("{}: unknown key '{}'", ctx, k.str()));
      }
    }
    return h;
  }

 private:
  fs::path file_;
};

std::string format_imbalance(double v) { return fmt::format("{:g}", v); }

}  // namespace

std::string SweepPoint::label() const {
  std::string s = fmt::format("{} {} GPUs {} tokens", model, gpus, tokens);
  if (imbalance != 0) s += " std " + format_imbalance(imbalance);
  return s;
}

const std::vector<std::string>& figure_kinds() {
  static const std::vector<std::string> kinds{"fig3", "fig4b", "fig12", "fig13", "fig14", "fig15", "fig16", "fig17", "table", "area"};
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
  std::vector<SweepPoint> out;
  if (!sweep) return out;
  const SweepAxes& a = axes(quick_subset);
  const std::string origin = file.string() + ": sweep";
  const std::vector<double> imbalance = a.imbalance.empty() ? std::vector<double>{0.0} : a.imbalance;
  const bool per_gpu = !a.seq_lengths.empty();
  for (const auto& model : a.models) {
    for (int64_t gpus : a.gpus) {
      for (int64_t n : per_gpu ? a.seq_lengths : a.tokens) {
        for (double std_dev : imbalance) {
          {
            SweepPoint p;
            p.model = model;
            p.gpus = gpus;
            p.seq_length = per_gpu ? n : 0;
            p.tokens = per_gpu ? n * gpus : n;
            p.imbalance = std_dev;
            p.origin = origin;
            p.settings.push_back({"run.model", model, origin + ".models"});
            p.settings.push_back({"run.gpus", std::to_string(gpus), origin + ".gpus"});
            p.settings.push_back({"run.tokens", std::to_string(p.tokens), origin + (per_gpu ? ".seq_lengths" : ".tokens")});
            p.settings.push_back({"workload.imbalance_std", fmt::format("{:.17g}", std_dev), origin + ".imbalance"});
            for (const auto& s : a.settings) p.settings.push_back(s);
            out.push_back(std::move(p));
          }
        }
      }
    }
  }
  return out;
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
  return parse(file).get("figure") != nullptr;
}

FigureSpec load_figure_spec(const fs::path& file) {
  const toml::table t = parse(file);
  const Reader r(file);
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
    throw UserError(where(file, n), fmt::format("'{}': a figure file holds only description, source, [figure], "
                                                "[sweep], [[headline]] and [[table_i]]; set parameters with "
                                                "sweep.set = [\"KEY=VALUE\"]",
                                                key));
  }
  s.kind = r.string(*fig, "kind", "figure", true);
  const auto& kinds = figure_kinds();
  if (std::find(kinds.begin(), kinds.end(), s.kind) == kinds.end()) {
    throw UserError(where(file, *fig->get("kind")),
                    fmt::format("figure.kind: unknown kind '{}' (known: {})", s.kind, fmt::join(kinds, ", ")));
  }
  s.title = r.string(*fig, "title", "figure", false);
  s.baseline = r.string(*fig, "baseline", "figure", false);
  s.speedup_of = r.string(*fig, "speedup_of", "figure", false);
  s.hardware = r.string(*fig, "hardware", "figure", false);
  for (const auto& [k, n] : *fig) {
    static const std::vector<std::string> known{"kind", "title", "baseline", "speedup_of", "hardware"};
    if (std::find(known.begin(), known.end(), std::string(k.str())) == known.end()) {
      throw UserError(where(file, n), fmt::format("figure: unknown key '{}'", k.str()));
    }
  }

  if (const toml::node* sweep = t.get("sweep")) {
    const toml::table* st = sweep->as_table();
    if (!st) throw UserError(where(file, *sweep), "sweep: expected a table");
    SweepAxes full;
    r.axes(*st, "sweep", full);
    r.check_complete(full, "sweep");
    SweepAxes quick = full;
    if (const toml::node* q = st->get("quick")) {
      if (!q->as_table()) throw UserError(where(file, *q), "sweep.quick: expected a table");
      r.axes(*q->as_table(), "sweep.quick", quick);
    }
    s.sweep = std::move(full);
    s.quick = std::move(quick);
  }
  const bool needs_sweep = s.kind != "table" && s.kind != "area";
  if (needs_sweep && !s.sweep) throw UserError(file.string(), fmt::format("kind '{}' needs a [sweep]", s.kind));
  if (!needs_sweep && s.sweep) throw UserError(file.string(), fmt::format("kind '{}' takes no [sweep]", s.kind));

  if (const toml::node* hs = t.get("headline")) {
    const toml::array* a = hs->as_array();
    if (!a) throw UserError(where(file, *hs), "headline: expected [[headline]] tables");
    for (const auto& h : *a) {
      if (!h.as_table()) throw UserError(where(file, h), "headline: expected [[headline]] tables");
      s.headlines.push_back(r.headline(*h.as_table(), s.headlines.size()));
    }
  }
  if (const toml::node* ts = t.get("table_i")) {
    const toml::array* a = ts->as_array();
    if (!a) throw UserError(where(file, *ts), "table_i: expected [[table_i]] tables");
    for (const auto& e : *a) {
      if (!e.as_table()) throw UserError(where(file, e), "table_i: expected [[table_i]] tables");
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
    if (is_figure_file(f)) out.push_back(load_figure_spec(f));
  }
  // The paper's order: the figures, then the table, then the area.
  const auto rank = [](const FigureSpec& s) {
    const auto& k = figure_kinds();
    return std::find(k.begin(), k.end(), s.kind) - k.begin();
  };
  std::stable_sort(out.begin(), out.end(), [&](const FigureSpec& a, const FigureSpec& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace moehub
