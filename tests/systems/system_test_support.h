#pragma once
// Runs one system on a small configuration and keeps the cluster for inspection.

#include <memory>
#include <string>
#include <vector>

#include "cli/config_builder.h"
#include "cli/param_catalog.h"
#include "config/preset_catalog.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "systems/cluster.h"
#include "systems/functional_data.h"
#include "systems/system_registry.h"

namespace moehub::testing {

// The verify experiment (small shapes, functional) plus `assignments` (--set KEY=VALUE).
inline Config small_config(const ParamRegistry& registry, const std::vector<std::string>& assignments) {
  PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  ConfigRequest req;
  req.config_files.push_back("verify");
  req.assignments = assignments;
  return build_config(catalog, registry, req);
}

struct SystemRun {
  ParamRegistry registry = build_param_registry();
  Config config;
  Workload workload;
  Simulator sim;
  std::unique_ptr<FunctionalData> functional;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<MoeSystem> system;
  std::string name;

  SystemRun(const std::string& system_name, const std::vector<std::string>& assignments, bool with_data = true)
      : config(small_config(registry, assignments)), workload(Workload::build(WorkloadConfig::from(config), ModelShape::from(config))), name(system_name) {
    if (with_data) functional = std::make_unique<FunctionalData>(workload, static_cast<uint64_t>(config.integer("run.seed")));
    cluster = std::make_unique<Cluster>(sim, config, workload, nullptr, functional.get());
    system = find_system(system_name)->make(config);
  }
  // Optional: replace store ports etc. on `cluster` before calling run().
  void run() {
    system->start(*cluster);
    cluster->run_to_completion(name);
  }
  Time layer() const {
    Time t = Time::zero();
    for (int g = 0; g < cluster->gpus(); ++g) t = max(t, *cluster->phases(g).done);
    return t;
  }
  int count(int g, Activity what) const {
    int n = 0;
    for (const auto& iv : cluster->activity(g).intervals()) n += iv.what == what ? 1 : 0;
    return n;
  }
  // First start and last end of the intervals of one kind on GPU g.
  std::pair<Time, Time> span(int g, Activity what) const {
    Time first = Time::max(), last = Time::zero();
    for (const auto& iv : cluster->activity(g).intervals()) {
      if (iv.what != what) continue;
      first = min(first, iv.start);
      last = max(last, iv.end);
    }
    return {first, last};
  }
};

}  // namespace moehub::testing
