#pragma once
// Runs one system on a configuration built from the presets and keeps the cluster for
// mechanism-level checks. The one harness of the system tests.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/config_builder.h"
#include "systems/param_catalog.h"
#include "config/preset_catalog.h"
#include "gpu/gpu.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "platform/cluster.h"
#include "platform/functional_data.h"
#include "platform/moe_system.h"
#include "systems/system_registry.h"

namespace moehub::test {

// Verify: the small shapes of configs/experiments/verify.toml; Defaults: the shipped defaults
// (Mixtral-8x7B on the DGX-H800). `assignments` (--set KEY=VALUE) go on top of either.
enum class ConfigBase { Verify, Defaults };

inline Config make_config(const ParamRegistry& registry, std::vector<std::string> assignments,
                          ConfigBase base = ConfigBase::Verify) {
  const PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  ConfigRequest req;
  if (base == ConfigBase::Verify) req.config_files.push_back("verify");
  req.assignments.push_back("run.check=true");  // every system test checks conservation at its end
  for (auto& a : assignments) req.assignments.push_back(std::move(a));
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
  std::string name;
  nlohmann::json stats;  // the system's own statistics, after run()

  // Builds the cluster; replace store ports etc. on `cluster` before calling run().
  SystemRun(std::string system_name, std::vector<std::string> assignments, bool with_functional = true,
            ConfigBase base = ConfigBase::Verify, const NetworkFactory& make_net = make_network)
      : config(make_config(registry, std::move(assignments), base)),
        workload(Workload::build(WorkloadConfig::from(config), ModelShape::from(config))),
        name(std::move(system_name)) {
    system = find_system(name)->make(config);
    // The workload as the system computes it (e.g. Tutel's plain experts), as `run` does.
    if (std::optional<Workload> own = system->own_workload(workload)) workload = std::move(*own);
    if (with_functional) functional.emplace(workload, static_cast<uint64_t>(config.integer("run.seed")));
    cluster = std::make_unique<Cluster>(sim, config, workload, nullptr, functional ? &*functional : nullptr, make_net);
  }
  void run() {
    system->start(*cluster);
    cluster->run_to_completion(name);
    stats = system->stats(*cluster);
  }

  Time layer() const {
    Time t = Time::zero();
    for (int g = 0; g < cluster->gpus(); ++g) t = max(t, *cluster->phases(g).done);
    return t;
  }
  int count(int g, Activity what) const;
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

// A run on the shipped defaults, already run (the comet and ccfuser tests).
struct DefaultsRun : SystemRun {
  DefaultsRun(std::string system_name, std::vector<std::string> assignments, bool with_functional = false)
      : SystemRun(std::move(system_name), std::move(assignments), with_functional, ConfigBase::Defaults) {
    run();
  }
};

// The verify shapes plus `assignments`, already run.
inline std::unique_ptr<SystemRun> run_system(const std::string& name, std::vector<std::string> assignments,
                                             bool functional = false) {
  auto r = std::make_unique<SystemRun>(name, std::move(assignments), functional);
  r->run();
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

inline int SystemRun::count(int g, Activity what) const { return count_activity(*cluster, g, what); }

}  // namespace moehub::test
