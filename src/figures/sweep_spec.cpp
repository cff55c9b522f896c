#include "figures/sweep_spec.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "sim/error.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

// Axes with a key of their own; a parameter axis may not set their paths behind their back.
const std::vector<std::pair<std::string, std::string>>& named_axis_paths() {
  static const std::vector<std::pair<std::string, std::string>> paths{
      {"run.model", "models"},       {"run.gpus", "gpus"},        {"run.tokens", "tokens"},
      {"run.hardware", "hardware"},  {"run.seed", "seeds"},       {"run.systems", "systems"},
      {"workload.imbalance_std", "imbalance"}};
  return paths;
}

// A TOML scalar as the text --set would take.
std::string value_text(const TomlReader& r, const toml::node& n, const std::string& key) {
  if (const auto s = n.value_exact<std::string>()) return *s;
  if (const auto i = n.value_exact<int64_t>()) return std::to_string(*i);
  if (const auto d = n.value_exact<double>()) return fmt::format("{}", *d);
  if (const auto b = n.value_exact<bool>()) return *b ? "true" : "false";
  throw UserError(r.where(n), fmt::format("{}: expected numbers, strings or booleans", key));
}

SweepAxis read_axis(const TomlReader& r, const std::string& path, const toml::node& n, const std::string& context) {
  const std::string key = context + "." + path;
  for (const auto& [reserved, axis] : named_axis_paths()) {
    if (path == reserved) throw UserError(r.where(n), fmt::format("{}: sweep '{}' with sweep.{}", key, path, axis));
  }
  SweepAxis a{path, {}, r.where(n)};
  for (const auto& e : r.array(n, key)) a.values.push_back(value_text(r, e, key));
  return a;
}

// [sweep.axes]: one crossed group per key.
std::vector<SweepGroup> read_crossed(const TomlReader& r, const toml::node& n, const std::string& context) {
  const toml::table* t = n.as_table();
  if (!t) throw UserError(r.where(n), context + ".axes: expected a table of KEY = [values]");
  std::vector<SweepGroup> out;
  for (const auto& [k, v] : *t) {
    out.push_back({{read_axis(r, std::string(k.str()), v, context + ".axes")}, v.source().begin.line});
  }
  return out;
}

// [[sweep.zip]]: each table is one group whose axes have the same length.
std::vector<SweepGroup> read_zipped(const TomlReader& r, const toml::node& n, const std::string& context) {
  const toml::array* a = n.as_array();
  if (!a) throw UserError(r.where(n), context + ".zip: expected [[" + context + ".zip]] tables");
  std::vector<SweepGroup> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table* t = (*a)[i].as_table();
    const std::string ctx = fmt::format("{}.zip[{}]", context, i);
    if (!t || t->empty()) throw UserError(r.where((*a)[i]), ctx + ": expected a table of KEY = [values]");
    SweepGroup g;
    g.line = (*a)[i].source().begin.line;
    std::vector<std::pair<int64_t, SweepAxis>> in_order;  // the table's keys come sorted by name
    for (const auto& [k, v] : *t) in_order.emplace_back(v.source().begin.line, read_axis(r, std::string(k.str()), v, ctx));
    std::stable_sort(in_order.begin(), in_order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [line, axis] : in_order) g.axes.push_back(std::move(axis));
    for (const SweepAxis& axis : g.axes) {
      if (axis.values.size() != g.size()) {
        throw UserError(axis.origin, fmt::format("{}: zipped axes of different lengths ('{}' has {} values, '{}' has {})",
                                                 ctx, g.axes.front().path, g.size(), axis.path, axis.values.size()));
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<SweepSetting> read_settings(const TomlReader& r, const toml::node& n, const std::string& path) {
  std::vector<SweepSetting> out;
  for (const auto& e : r.array(n, path)) {
    const auto text = e.value<std::string>();
    const size_t eq = text ? text->find('=') : std::string::npos;
    if (!text || eq == std::string::npos || eq == 0) {
      throw UserError(r.where(e), fmt::format("{}: expected \"KEY=VALUE\" strings", path));
    }
    out.push_back({text->substr(0, eq), text->substr(eq + 1), r.where(e)});
  }
  return out;
}

// [[sweep.where]]: each table is `set` and the coordinates it applies to (a value or a list each).
std::vector<SweepWhere> read_where(const TomlReader& r, const toml::node& n, const std::string& context) {
  const toml::array* a = n.as_array();
  if (!a) throw UserError(r.where(n), context + ".where: expected [[" + context + ".where]] tables");
  std::vector<SweepWhere> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table* t = (*a)[i].as_table();
    const std::string ctx = fmt::format("{}.where[{}]", context, i);
    if (!t) throw UserError(r.where((*a)[i]), ctx + ": expected a table of coordinates and set");
    SweepWhere w;
    w.origin = r.where((*a)[i]);
    for (const auto& [k, v] : *t) {
      const std::string key = ctx + "." + std::string(k.str());
      if (k.str() == "set") {
        w.settings = read_settings(r, v, key);
        continue;
      }
      std::vector<std::string> values;
      if (v.is_array()) {
        for (const auto& e : r.array(v, key)) values.push_back(value_text(r, e, key));
      } else {
        values.push_back(value_text(r, v, key));
      }
      w.match.emplace_back(std::string(k.str()), std::move(values));
    }
    if (w.settings.empty()) throw UserError(w.origin, ctx + ": missing 'set'");
    if (w.match.empty()) throw UserError(w.origin, ctx + ": no coordinate to match (sweep.set applies to every point)");
    out.push_back(std::move(w));
  }
  return out;
}

// [[sweep.variant]]: name, system and set (KEY=VALUE strings).
std::vector<SweepVariant> read_variants(const TomlReader& r, const toml::node& n, const std::string& context) {
  const toml::array* a = n.as_array();
  if (!a) throw UserError(r.where(n), context + ".variant: expected [[" + context + ".variant]] tables");
  std::vector<SweepVariant> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::table* t = (*a)[i].as_table();
    const std::string ctx = fmt::format("{}.variant[{}]", context, i);
    if (!t) throw UserError(r.where((*a)[i]), ctx + ": expected a table of name, system and set");
    r.only_keys(*t, {"name", "system", "set"}, ctx);
    SweepVariant v{r.string(*t, "name", ctx, true), r.string(*t, "system", ctx, true), {}, r.where((*a)[i])};
    if (const toml::node* set = t->get("set")) v.settings = read_settings(r, *set, ctx + ".set");
    if (v.settings.empty()) throw UserError(v.origin, ctx + ": missing 'set' (a variant without settings is its system)");
    for (const SweepVariant& w : out) {
      if (w.name == v.name) throw UserError(v.origin, fmt::format("{}: variant '{}' named twice", ctx, v.name));
    }
    out.push_back(std::move(v));
  }
  return out;
}

// A variant's settings leave the swept paths alone, as a where's do.
void check_variants(const SweepAxes& axes, const std::string& context) {
  if (axes.variants.empty()) return;
  const std::vector<std::string> names = axes.coordinate_names();
  for (const SweepVariant& v : axes.variants) {
    for (const SweepSetting& s : v.settings) {
      for (const auto& [reserved, axis] : named_axis_paths()) {
        if (s.path == reserved) throw UserError(s.origin, fmt::format("{}.variant: set '{}' with sweep.{}", context, s.path, axis));
      }
      if (std::find(names.begin(), names.end(), s.path) != names.end()) {
        throw UserError(s.origin, fmt::format("{}.variant: '{}' is a swept axis; a variant may not set it", context, s.path));
      }
    }
  }
}

// A where's keys name coordinates of the sweep, and its settings leave the swept paths alone
// (a point's coordinates must say what ran).
void check_where(const SweepAxes& axes, const std::string& context) {
  if (axes.where.empty()) return;
  const std::vector<std::string> names = axes.coordinate_names();
  for (const SweepWhere& w : axes.where) {
    for (const auto& [name, values] : w.match) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      throw UserError(w.origin, fmt::format("{}.where: '{}' is not a coordinate of the sweep (coordinates: {})", context,
                                            name, fmt::join(names, ", ")));
    }
    for (const SweepSetting& s : w.settings) {
      for (const auto& [reserved, axis] : named_axis_paths()) {
        if (s.path == reserved) throw UserError(s.origin, fmt::format("{}.where: set '{}' with sweep.{}", context, s.path, axis));
      }
      if (std::find(names.begin(), names.end(), s.path) != names.end()) {
        throw UserError(s.origin, fmt::format("{}.where: '{}' is a swept axis; a where may not set it", context, s.path));
      }
    }
  }
}

// Coordinates are text; "0.032" matches the imbalance axis's "0.032000000000000001".
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a.empty() || b.empty()) return false;
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  return *end_a == '\0' && *end_b == '\0' && x == y;
}

bool matches(const SweepWhere& w, const SweepPoint& p) {
  for (const auto& [name, values] : w.match) {
    const auto c = std::find_if(p.coordinates.begin(), p.coordinates.end(), [&](const auto& x) { return x.first == name; });
    if (c == p.coordinates.end()) return false;
    if (std::none_of(values.begin(), values.end(), [&](const std::string& v) { return same_value(c->second, v); })) return false;
  }
  return true;
}

// One axis of the crossing: how many values, and what choosing the i-th does to a point.
struct Dimension {
  size_t size = 0;
  std::function<void(size_t, SweepPoint&)> apply;
};

void set(SweepPoint& p, const std::string& name, const std::string& path, std::string value, const std::string& origin) {
  p.coordinates.emplace_back(name, value);
  p.settings.push_back({path, std::move(value), origin});
}

std::vector<SweepGroup> groups_in_file_order(const SweepAxes& a) {
  std::vector<SweepGroup> groups = a.crossed;
  groups.insert(groups.end(), a.zipped.begin(), a.zipped.end());
  std::stable_sort(groups.begin(), groups.end(), [](const SweepGroup& x, const SweepGroup& y) { return x.line < y.line; });
  return groups;
}

std::vector<Dimension> dimensions(const SweepAxes& a, const std::string& origin) {
  std::vector<Dimension> d;
  const auto add = [&](size_t n, std::function<void(size_t, SweepPoint&)> f) {
    if (n > 0) d.push_back({n, std::move(f)});
  };
  add(a.models.size(), [&a, origin](size_t i, SweepPoint& p) {
    p.model = a.models[i];
    set(p, "model", "run.model", p.model, a.origin_of("models", origin));
  });
  add(a.gpus.size(), [&a, origin](size_t i, SweepPoint& p) {
    p.gpus = a.gpus[i];
    set(p, "gpus", "run.gpus", std::to_string(p.gpus), a.origin_of("gpus", origin));
  });
  const bool per_gpu = !a.seq_lengths.empty();
  add(per_gpu ? a.seq_lengths.size() : a.tokens.size(), [&a, origin, per_gpu](size_t i, SweepPoint& p) {
    p.seq_length = per_gpu ? a.seq_lengths[i] : 0;
    p.tokens = per_gpu ? a.seq_lengths[i] * p.gpus : a.tokens[i];
    if (per_gpu) p.coordinates.emplace_back("seq_length", std::to_string(p.seq_length));
    p.settings.push_back({"run.tokens", std::to_string(p.tokens), a.origin_of(per_gpu ? "seq_lengths" : "tokens", origin)});
    if (!per_gpu) p.coordinates.emplace_back("tokens", std::to_string(p.tokens));
  });
  add(a.imbalance.size(), [&a, origin](size_t i, SweepPoint& p) {
    p.imbalance = a.imbalance[i];
    set(p, "imbalance", "workload.imbalance_std", fmt::format("{:.17g}", p.imbalance), a.origin_of("imbalance", origin));
  });
  add(a.hardware.size(),
      [&a, origin](size_t i, SweepPoint& p) { set(p, "hardware", "run.hardware", a.hardware[i], a.origin_of("hardware", origin)); });
  for (SweepGroup g : groups_in_file_order(a)) {
    add(g.size(), [g](size_t i, SweepPoint& p) {
      for (const SweepAxis& axis : g.axes) set(p, axis.path, axis.path, axis.values[i], axis.origin);
    });
  }
  add(a.seeds.size(), [&a, origin](size_t i, SweepPoint& p) {
    p.seed = a.seeds[i];
    set(p, "seed", "run.seed", std::to_string(p.seed), a.origin_of("seeds", origin));
  });
  return d;
}

}  // namespace

std::string SweepAxes::origin_of(const std::string& axis, const std::string& fallback) const {
  const auto it = origins.find(axis);
  return it == origins.end() ? fallback + "." + axis : it->second;
}

const SweepVariant* SweepAxes::variant(const std::string& name) const {
  for (const SweepVariant& v : variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::vector<std::string> SweepAxes::coordinate_names() const {
  const std::vector<SweepPoint> one = sweep_points(*this, "");
  std::vector<std::string> out;
  if (!one.empty()) {
    for (const auto& [name, value] : one.front().coordinates) out.push_back(name);
  }
  return out;
}

std::string SweepPoint::label() const {
  std::string s;
  if (!model.empty()) s = fmt::format("{} {} GPUs {} tokens", model, gpus, tokens);
  if (imbalance != 0) s += " std " + fmt::format("{:g}", imbalance);
  for (const auto& [name, value] : coordinates) {
    if (name == "model" || name == "gpus" || name == "tokens" || name == "seq_length" || name == "imbalance") {
      if (!model.empty()) continue;
    }
    s += (s.empty() ? "" : " ") + name + "=" + value;
  }
  return s.empty() ? "the configured point" : s;
}

void read_sweep_axes(const TomlReader& r, const toml::table& t, const std::string& context, SweepAxes& axes) {
  for (const auto& [k, n] : t) {
    const std::string key(k.str());
    const std::string path = context + "." + key;
    if (key == "quick" && context == "sweep") continue;
    axes.origins[key] = r.where(n) + ": " + path;
    if (key == "models") {
      axes.models = r.strings(n, path);
    } else if (key == "gpus") {
      axes.gpus = r.positive_integers(n, path);
    } else if (key == "tokens") {
      axes.tokens = r.positive_integers(n, path);
      axes.seq_lengths.clear();
    } else if (key == "seq_lengths") {
      axes.seq_lengths = r.positive_integers(n, path);
      axes.tokens.clear();
    } else if (key == "imbalance") {
      axes.imbalance = r.numbers(n, path);
    } else if (key == "hardware") {
      axes.hardware = r.strings(n, path);
    } else if (key == "seeds") {
      axes.seeds = r.positive_integers(n, path);
    } else if (key == "systems") {
      axes.systems = r.strings(n, path);
    } else if (key == "axes") {
      axes.crossed = read_crossed(r, n, context);
    } else if (key == "zip") {
      axes.zipped = read_zipped(r, n, context);
    } else if (key == "set") {
      axes.settings = read_settings(r, n, path);
    } else if (key == "where") {
      axes.where = read_where(r, n, context);
    } else if (key == "variant") {
      axes.variants = read_variants(r, n, context);
    } else {
      throw UserError(r.where(n), fmt::format("unknown sweep key '{}' (known: models, gpus, tokens, seq_lengths, "
                                              "imbalance, hardware, seeds, systems, axes, zip, set, where, variant{})",
                                              path, context == "sweep" ? ", quick" : ""));
    }
  }
  if (!axes.seq_lengths.empty() && axes.gpus.empty()) {
    throw UserError(r.file().string(), context + ": seq_lengths (tokens per GPU) needs gpus");
  }
  check_where(axes, context);
  check_variants(axes, context);
}

void require_registered_systems(const SweepAxes& full, const SweepAxes& quick, const std::string& where) {
  std::vector<std::string> known;
  for (const auto& e : all_systems()) known.push_back(e.name);
  for (const SweepAxes* axes : {&full, &quick}) {
    for (const SweepVariant& v : axes->variants) {
      if (find_system(v.name)) throw UserError(v.origin, fmt::format("variant '{}' takes a registered system's name", v.name));
      if (!find_system(v.system)) {
        throw UserError(v.origin, fmt::format("variant '{}': unknown system '{}' (known: {})", v.name, v.system,
                                              fmt::join(known, ", ")));
      }
    }
    for (const std::string& name : axes->systems) {
      if (find_system(name) || axes->variant(name)) continue;
      throw UserError(where + ": sweep.systems", fmt::format("unknown system '{}' (known: {})", name, fmt::join(known, ", ")));
    }
  }
}

std::pair<std::string, SweepPoint> system_run(const SweepAxes& axes, const SweepPoint& point, const std::string& name) {
  const SweepVariant* v = axes.variant(name);
  if (!v) return {name, point};
  SweepPoint p = point;
  p.settings.insert(p.settings.end(), v->settings.begin(), v->settings.end());
  p.coordinates.emplace_back("variant", v->name);  // progress lines and errors name it (label())
  return {v->system, std::move(p)};
}

std::vector<SweepPoint> sweep_points(const SweepAxes& axes, const std::string& origin) {
  const std::vector<Dimension> dims = dimensions(axes, origin);
  size_t total = 1;
  for (const Dimension& d : dims) total *= d.size;
  std::vector<SweepPoint> out;
  out.reserve(total);
  for (size_t n = 0; n < total; ++n) {
    SweepPoint p;
    p.origin = origin;
    std::vector<size_t> index(dims.size());
    size_t rest = n;
    for (size_t k = dims.size(); k-- > 0;) {  // the last dimension varies fastest
      index[k] = rest % dims[k].size;
      rest /= dims[k].size;
    }
    for (size_t k = 0; k < dims.size(); ++k) dims[k].apply(index[k], p);
    for (const auto& s : axes.settings) p.settings.push_back(s);
    for (const SweepWhere& w : axes.where) {
      if (matches(w, p)) p.settings.insert(p.settings.end(), w.settings.begin(), w.settings.end());
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace moehub
