#pragma once
// The [sweep] table that figure files and sweep files share: named axes (models, gpus, tokens or
// seq_lengths, imbalance, hardware, seeds, systems), any parameter as a crossed axis
// ([sweep.axes]) or as axes advancing together ([[sweep.zip]]), fixed settings (set), and the
// points they span. Format: docs/figures.md.

#include <cstdint>
#include <map>
#include <string>
#include <toml++/toml.h>
#include <utility>
#include <vector>

#include "figures/toml_reader.h"

namespace moehub {

// One key path set for every point of a sweep (`set = ["KEY=VALUE", ...]`), or one axis value.
struct SweepSetting {
  std::string path;
  std::string text;
  std::string origin;  // "file:line", named in errors
};

// A parameter swept over values (as --set text).
struct SweepAxis {
  std::string path;
  std::vector<std::string> values;
  std::string origin;  // "file:line"
};

// Axes that advance together: one from [sweep.axes], several from one [[sweep.zip]] table.
// Groups are crossed with each other in the order they appear in the file.
struct SweepGroup {
  std::vector<SweepAxis> axes;  // each with size() values
  int64_t line = 0;             // where it starts in the file, for the crossing order
  size_t size() const { return axes.empty() ? 0 : axes.front().values.size(); }
};

// [[sweep.where]]: settings for the points whose coordinates match, e.g. redundant experts only
// where a model's experts do not cover the GPUs. Every key must match (values compare as text,
// or as numbers when both parse as numbers).
struct SweepWhere {
  std::vector<std::pair<std::string, std::vector<std::string>>> match;  // coordinate -> values
  std::vector<SweepSetting> settings;                                   // applied after `set`
  std::string origin;                                                   // "file:line"
};

// [[sweep.variant]]: a registered system run with settings of its own, named in `systems` like a
// system and drawn as a series of its own (e.g. DeepEP's low-latency kernels beside its normal
// ones). Its settings go after the point's, so they override `set` and the wheres.
struct SweepVariant {
  std::string name;                    // in `systems`, the CSV's system column and the plots
  std::string system;                  // the registered system that runs
  std::vector<SweepSetting> settings;  // at least one
  std::string origin;                  // "file:line"
};

struct SweepAxes {
  std::vector<std::string> models;
  std::vector<int64_t> gpus;
  std::vector<int64_t> tokens;       // total tokens over all GPUs
  std::vector<int64_t> seq_lengths;  // tokens per GPU (total = seq x gpus); exclusive with tokens
  std::vector<double> imbalance;
  std::vector<std::string> hardware;
  std::vector<int64_t> seeds;        // run.seed; repeats every point once per seed
  std::vector<std::string> systems;
  std::vector<SweepGroup> crossed;   // [sweep.axes]
  std::vector<SweepGroup> zipped;    // [[sweep.zip]]
  std::vector<SweepSetting> settings;
  std::vector<SweepWhere> where;     // [[sweep.where]], in file order
  std::vector<SweepVariant> variants;  // [[sweep.variant]]
  std::map<std::string, std::string> origins;  // named axis ("models") -> "file:line: sweep.models"

  // Where the named axis was given ("file:line: sweep.models"), else "<fallback>.<axis>".
  std::string origin_of(const std::string& axis, const std::string& fallback) const;
  // The variant named `name`, or nullptr (a registered system or an unknown name).
  const SweepVariant* variant(const std::string& name) const;
  // The columns a point's coordinates have, in order (e.g. "model", "tokens", "hub.rat.entries", "seed").
  std::vector<std::string> coordinate_names() const;
};

// One configuration of the sweep; each system runs on it separately.
struct SweepPoint {
  std::string model;       // empty when the sweep does not name models (the configured one runs)
  int64_t gpus = 0;        // 0: not swept
  int64_t tokens = 0;      // 0: not swept
  int64_t seq_length = 0;  // 0 when the sweep gives total tokens
  double imbalance = 0;
  int64_t seed = 0;        // 0: not swept
  std::vector<std::pair<std::string, std::string>> coordinates;  // (name, value) per swept axis
  std::vector<SweepSetting> settings;  // axis values first, then `set`, then matching `where`s, in order
  std::string origin;                  // "<file>: sweep", named in errors

  std::string label() const;  // e.g. "mixtral-8x7b 8 GPUs 8192 tokens std 0.032 hub.rat.entries=64"
};

// Applies the keys of a [sweep] (or [sweep.quick]) table over `axes`; `context` is "sweep" or
// "sweep.quick".
void read_sweep_axes(const TomlReader& reader, const toml::table& t, const std::string& context, SweepAxes& axes);

// Every system the sweep names (full and quick) is registered or a variant of a registered one,
// and no variant takes a registered system's name: UserError "<where>: sweep.systems" (or the
// variant's file:line) naming the unknown one and the known ones.
void require_registered_systems(const SweepAxes& full, const SweepAxes& quick, const std::string& where);

// Every point of the axes crossed (zipped groups advance together), the first axis outermost:
// models, gpus, tokens, imbalance, hardware, the parameter groups in file order, then seeds;
// each with the settings of the [[sweep.where]] tables its coordinates match.
std::vector<SweepPoint> sweep_points(const SweepAxes& axes, const std::string& origin);

// The registered system that runs `name` (the variant's, or `name` itself) and the point with
// the variant's settings after its own.
std::pair<std::string, SweepPoint> system_run(const SweepAxes& axes, const SweepPoint& point, const std::string& name);

}  // namespace moehub
