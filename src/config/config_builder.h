#pragma once
// Builds the resolved configuration of one run from, in increasing precedence: defaults.toml,
// the hardware and model presets, --config files, flags and --set assignments.

#include <string>
#include <vector>

#include "config/config.h"
#include "config/preset_catalog.h"

namespace moehub {

struct FlagValue {
  std::string path;  // key path the flag sets, e.g. "run.gpus"
  std::string text;  // value as typed
  std::string flag;  // e.g. "--gpus", named in errors
};

struct ConfigRequest {
  std::vector<std::string> config_files;
  std::vector<FlagValue> flags;
  std::vector<std::string> assignments;  // --set KEY=VALUE, in order
  std::string nodes;                     // --nodes N: run.gpus = N x net.gpus_per_node; empty: not given
};

Config build_config(const PresetCatalog& catalog, const ParamRegistry& registry, const ConfigRequest& request);

}  // namespace moehub
