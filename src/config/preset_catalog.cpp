#include "config/preset_catalog.h"

#include <algorithm>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "sim/error.h"

namespace moehub {
namespace {

constexpr int kMaxBaseDepth = 8;

toml::table parse_or_throw(const std::filesystem::path& file) {
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& err) {
    throw UserError(fmt::format("{}:{}", file.string(), err.source().begin.line), std::string(err.description()));
  }
}

}  // namespace

const char* preset_kind_folder(PresetKind kind) {
  switch (kind) {
    case PresetKind::Hardware: return "hardware";
    case PresetKind::Model: return "models";
    case PresetKind::Experiment: return "experiments";
  }
  return "?";
}

const std::vector<std::string>& PresetCatalog::metadata_keys() {
  static const std::vector<std::string> keys{"description", "source", "base"};
  return keys;
}

PresetCatalog::PresetCatalog(std::filesystem::path config_dir) : dir_(std::move(config_dir)) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) {
    throw UserError("--config-dir", fmt::format("'{}' is not a directory of presets", dir_.string()));
  }
}

std::vector<PresetInfo> PresetCatalog::list(PresetKind kind) const {
  std::vector<PresetInfo> out;
  const auto folder = dir_ / preset_kind_folder(kind);
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".toml") continue;
    PresetInfo info{entry.path().stem().string(), entry.path(), ""};
    const toml::table t = parse_or_throw(entry.path());
    info.description = t["description"].value_or(std::string());
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const PresetInfo& a, const PresetInfo& b) { return a.name < b.name; });
  return out;
}

std::filesystem::path PresetCatalog::resolve(PresetKind kind, const std::string& name_or_file,
                                             const std::string& where) const {
  std::error_code ec;
  const std::filesystem::path as_path(name_or_file);
  if (name_or_file.find('/') != std::string::npos || as_path.extension() == ".toml") {
    if (!std::filesystem::is_regular_file(as_path, ec)) {
      throw UserError(where, fmt::format("no such file '{}'", name_or_file));
    }
    return as_path;
  }
  const auto file = dir_ / preset_kind_folder(kind) / (name_or_file + ".toml");
  if (std::filesystem::is_regular_file(file, ec)) return file;
  std::vector<std::string> names;
  for (const auto& p : list(kind)) names.push_back(p.name);
  throw UserError(where, fmt::format("unknown {} preset '{}' (known: {})", preset_kind_folder(kind), name_or_file,
                                     fmt::join(names, ", ")));
}

void PresetCatalog::merge_preset(Config& config, PresetKind kind, const std::filesystem::path& file) const {
  merge_chain(config, kind, file, 0);
}

void PresetCatalog::merge_chain(Config& config, PresetKind kind, const std::filesystem::path& file, int depth) const {
  if (depth > kMaxBaseDepth) throw UserError(file.string(), "chain of 'base' presets is too deep (a cycle?)");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) throw UserError(file.string(), "no such file");
  const toml::table t = parse_or_throw(file);
  if (const auto* base = t.get("base")) {
    const auto name = base->value<std::string>();
    if (!name) throw UserError(fmt::format("{}:{}", file.string(), base->source().begin.line), "base: expected a preset name");
    std::filesystem::path base_file = file.parent_path() / *name;
    if (!std::filesystem::is_regular_file(base_file, ec)) base_file = file.parent_path() / (*name + ".toml");
    if (!std::filesystem::is_regular_file(base_file, ec)) base_file = resolve(kind, *name, file.string() + ": base");
    merge_chain(config, kind, base_file, depth + 1);
  }
  config.merge_file(file, metadata_keys());
}

}  // namespace moehub
