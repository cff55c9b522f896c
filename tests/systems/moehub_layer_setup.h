#pragma once
// Shared by the MoE-Hub unit and model-level tests.

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_builder.h"
#include "config/preset_catalog.h"
#include "platform/experiment.h"
#include "systems/param_catalog.h"
#include "systems/system_registry.h"

namespace moehub::test {

// A resolved configuration (defaults, presets, then `sets`) and its workload.
struct LayerSetup {
  ParamRegistry registry = build_param_registry();
  PresetCatalog catalog{MOEHUB_SOURCE_CONFIG_DIR};
  std::unique_ptr<Config> config;
  std::unique_ptr<Workload> workload;

  LayerSetup(std::vector<std::string> sets, bool functional) {
    ConfigRequest request;
    if (functional) request.config_files.push_back("verify");
    request.assignments = std::move(sets);
    config = std::make_unique<Config>(build_config(catalog, registry, request));
    workload = std::make_unique<Workload>(Workload::build(WorkloadConfig::from(*config), ModelShape::from(*config)));
  }

  std::vector<SystemOutcome> run(const std::string& systems, bool functional = false) const {
    ExperimentOptions options;
    options.functional = functional;
    return run_experiment(*config, *workload, select_systems(systems), options);
  }
};

inline const nlohmann::json& hub(const SystemOutcome& o) { return o.result.stats.at("hub"); }

// 512 tokens of a narrowed Mixtral-8x7B (hidden 1024: 2 KiB rows) on 8 GPUs: 1024 rows, about
// 128 per expert; small enough to simulate in well under a second.
inline std::vector<std::string> small_layer() { return {"run.tokens=512", "model.hidden=1024", "model.ffn_hidden=2048"}; }
}  // namespace moehub::test
