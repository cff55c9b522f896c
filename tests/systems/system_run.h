#pragma once
// Runs one system on a configuration built from the presets (plus `verify` shapes and --set
// assignments), keeping the cluster for inspection.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/config_builder.h"
#include "cli/param_catalog.h"
#include "config/preset_catalog.h"
#include "gpu/gpu.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "systems/cluster.h"
#include "systems/functional_data.h"
#include "systems/moe_system.h"
#include "systems/system_registry.h"

namespace moehub::test {

// The verify shapes (configs/experiments/verify.toml) plus `assignments`.
inline Config make_config(const ParamRegistry& registry, std::vector<std::string> assignments) {
  const PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  ConfigRequest req;
  req.config_files.push_back("verify");
  req.assignments = std::move(assignments);
  return build_config(catalog, registry, req);
}

struct SystemRun {
  ParamRegistry registry = build_param_registry();  // the Config points into it
  Config config;
  Workload workload;
  std::optional<FunctionalData> functional;
  Simulator sim;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<MoeSystem> system;

  SystemRun(std::vector<std::string> assignments, bool with_functional)
      : config(make_config(registry, std::move(assignments))), workload(Workload::build(WorkloadConfig::from(config), ModelShape::from(config))) {
    if (with_functional) functional.emplace(workload, static_cast<uint64_t>(config.integer("run.seed")));
  }
};

inline std::unique_ptr<SystemRun> run_system(const std::string& name, std::vector<std::string> assignments,
                                             bool functional = false) {
  auto r = std::make_unique<SystemRun>(std::move(assignments), functional);
  r->cluster = std::make_unique<Cluster>(r->sim, r->config, r->workload, nullptr,
                                         r->functional ? &*r->functional : nullptr);
  r->system = find_system(name)->make(r->config);
  r->system->start(*r->cluster);
  r->cluster->run_to_completion(name);
  return r;
}

// Every kernel GPU g ran (ids are dense from 0).
inline std::vector<gpu::KernelTimes> kernels(Cluster& c, int g) {
  std::vector<gpu::KernelTimes> out;
  for (gpu::KernelId id = 0;; ++id) {
    try {
      out.push_back(c.gpu(g).kernel_times(id));
    } catch (const std::logic_error&) {
      return out;
    }
  }
}

inline int count_activity(Cluster& c, int g, Activity a) {
  int n = 0;
  for (const auto& i : c.activity(g).intervals()) n += i.what == a ? 1 : 0;
  return n;
}

}  // namespace moehub::test
