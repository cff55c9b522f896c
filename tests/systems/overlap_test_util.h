#pragma once
// Runs one system on a small configuration built from the presets and keeps the cluster for
// mechanism-level checks (shared by the comet and ccfuser tests).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/config_builder.h"
#include "cli/param_catalog.h"
#include "systems/cluster.h"
#include "systems/system_registry.h"

namespace moehub::testing {

struct SystemRun {
  ParamRegistry registry = build_param_registry();
  Config config;
  std::optional<Workload> workload;
  Simulator sim;
  std::optional<FunctionalData> functional;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<MoeSystem> system;
  nlohmann::json stats;

  SystemRun(const std::string& name, std::vector<std::string> sets, bool with_functional = false) : config(registry) {
    PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
    ConfigRequest req;
    req.assignments = std::move(sets);
    config = build_config(catalog, registry, req);
    workload.emplace(Workload::build(WorkloadConfig::from(config), ModelShape::from(config)));
    if (with_functional) functional.emplace(*workload, static_cast<uint64_t>(config.integer("run.seed")));
    cluster = std::make_unique<Cluster>(sim, config, *workload, nullptr, functional ? &*functional : nullptr);
    system = find_system(name)->make(config);
    system->start(*cluster);
    cluster->run_to_completion(name);
    stats = system->stats(*cluster);
  }

  size_t count(int g, Activity what) const {
    size_t n = 0;
    for (const auto& iv : cluster->activity(g).intervals()) n += iv.what == what ? 1 : 0;
    return n;
  }
};

}  // namespace moehub::testing
