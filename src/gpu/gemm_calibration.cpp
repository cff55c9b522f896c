#include "gpu/gemm_calibration.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <toml++/toml.h>

#include "sim/error.h"

namespace moehub::gpu {
namespace {

uint64_t positive_integer(const toml::table& entry, const char* key, const std::string& where, uint64_t fallback,
                          bool required) {
  const toml::node* node = entry.get(key);
  if (!node) {
    if (required) throw UserError(where, fmt::format("missing '{}'", key));
    return fallback;
  }
  const auto value = node->value<int64_t>();
  if (!value || *value < 1) throw UserError(where, fmt::format("'{}' must be an integer of at least 1", key));
  return static_cast<uint64_t>(*value);
}

double log_gap(uint64_t a, uint64_t b) {
  const double d = std::log(static_cast<double>(a)) - std::log(static_cast<double>(b));
  return d * d;
}

}  // namespace

GemmCalibration::GemmCalibration(std::vector<GemmMeasurement> points, std::string source)
    : points_(std::move(points)), source_(std::move(source)) {
  if (points_.empty()) throw UserError(source_, "holds no [[gemm]] or [[grouped_gemm]] measurement");
}

GemmCalibration GemmCalibration::load(const std::filesystem::path& file) {
  const std::string name = file.string();
  toml::table root;
  try {
    root = toml::parse_file(name);
  } catch (const toml::parse_error& err) {
    if (!err.source().begin) throw UserError(name, "cannot be read");
    throw UserError(fmt::format("{}:{}", name, err.source().begin.line), std::string(err.description()));
  }
  std::vector<GemmMeasurement> points;
  for (const char* kind : {"gemm", "grouped_gemm"}) {
    const toml::node* list = root.get(kind);
    if (!list) continue;
    const toml::array* array = list->as_array();
    if (!array) throw UserError(fmt::format("{}:{}", name, list->source().begin.line), fmt::format("'{}' must be an array of tables", kind));
    for (const toml::node& node : *array) {
      const std::string where = fmt::format("{}:{}", name, node.source().begin.line);
      const toml::table* entry = node.as_table();
      if (!entry) throw UserError(where, fmt::format("each '{}' entry must be a table", kind));
      const bool grouped = std::string(kind) == "grouped_gemm";
      GemmMeasurement p;
      p.line = static_cast<int>(node.source().begin.line);
      p.groups = grouped ? positive_integer(*entry, "groups", where, 1, true) : 1;
      p.m = positive_integer(*entry, grouped ? "m_per_group" : "m", where, 0, true);
      p.n = positive_integer(*entry, "n", where, 0, true);
      p.k = positive_integer(*entry, "k", where, 0, true);
      const auto us = entry->get("time_us") ? entry->get("time_us")->value<double>() : std::nullopt;
      if (!us || !std::isfinite(*us) || *us <= 0) throw UserError(where, "'time_us' must be a positive number");
      p.time = Time::from_ps(std::llround(*us * 1e6));
      if (p.time <= Time::zero()) throw UserError(where, "'time_us' rounds to zero picoseconds");
      points.push_back(p);
    }
  }
  return GemmCalibration(std::move(points), name);
}

const GemmMeasurement& GemmCalibration::nearest(uint64_t groups, uint64_t m, uint64_t n, uint64_t k) const {
  const bool grouped = groups > 1;
  bool have_kind = false;
  for (const GemmMeasurement& p : points_) have_kind = have_kind || ((p.groups > 1) == grouped);
  const GemmMeasurement* best = nullptr;
  double best_gap = std::numeric_limits<double>::infinity();
  for (const GemmMeasurement& p : points_) {
    if (have_kind && (p.groups > 1) != grouped) continue;
    const double gap = log_gap(p.m, m) + log_gap(p.n, n) + log_gap(p.k, k) + log_gap(p.groups, groups);
    if (gap < best_gap) {  // ties keep the first in file order: deterministic
      best_gap = gap;
      best = &p;
    }
  }
  return *best;
}

}  // namespace moehub::gpu
