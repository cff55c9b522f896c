#pragma once
// The preset files under configs/: hardware boards, models and experiments. A preset may name
// another of its kind as `base = "name"` and override only what differs.

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"

namespace moehub {

enum class PresetKind { Hardware, Model, Experiment };

const char* preset_kind_folder(PresetKind kind);  // "hardware", "models", "experiments"

struct PresetInfo {
  std::string name;
  std::filesystem::path file;
  std::string description;
};

class PresetCatalog {
 public:
  explicit PresetCatalog(std::filesystem::path config_dir);

  const std::filesystem::path& config_dir() const { return dir_; }
  std::filesystem::path defaults_file() const { return dir_ / "defaults.toml"; }

  std::vector<PresetInfo> list(PresetKind kind) const;
  // A preset name, or a path to a TOML file. `where` (a flag or key) is named in errors.
  std::filesystem::path resolve(PresetKind kind, const std::string& name_or_file, const std::string& where) const;
  // Merges the preset and, first, its chain of `base` presets.
  void merge_preset(Config& config, PresetKind kind, const std::filesystem::path& file) const;

  // Top-level keys of preset files that are not parameters.
  static const std::vector<std::string>& metadata_keys();

 private:
  void merge_chain(Config& config, PresetKind kind, const std::filesystem::path& file, int depth) const;

  std::filesystem::path dir_;
};

}  // namespace moehub
