#pragma once
// Shared by the ideal-layer unit and model-level tests.

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_builder.h"
#include "config/preset_catalog.h"
#include "moe/workload.h"
#include "systems/param_catalog.h"

namespace moehub::test {

struct SmallLayer {
  ParamRegistry registry = build_param_registry();
  Config config;
  std::optional<Workload> workload;
  explicit SmallLayer(std::vector<std::string> sets) : config(registry) {
    PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
    ConfigRequest req;
    req.assignments = std::move(sets);
    config = build_config(catalog, registry, req);
    workload.emplace(Workload::build(WorkloadConfig::from(config), ModelShape::from(config)));
  }
};
}  // namespace moehub::test
