#pragma once
// Resolves a figure point's settings into the configuration of one run: defaults, presets and
// the point's settings as flags (src/config/config_builder.h). Presets are looked up first so
// that an unknown name is reported at the figure file's line.

#include <vector>

#include "config/config.h"
#include "config/param_registry.h"
#include "config/preset_catalog.h"
#include "figures/figure_spec.h"

namespace moehub {

class ConfigSource {
 public:
  ConfigSource(PresetCatalog catalog, const ParamRegistry& registry) : catalog_(std::move(catalog)), registry_(registry) {}
  Config build(const std::vector<SweepSetting>& settings) const;

 private:
  PresetCatalog catalog_;
  const ParamRegistry& registry_;
};

}  // namespace moehub
