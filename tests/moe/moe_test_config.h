#pragma once
// Builds resolved configs for the workload tests from the shipped model presets, without the
// hardware and network sections (only run.*, model.* and workload.* are declared).

#include <filesystem>
#include <string>

#include "config/config.h"
#include "config/param_registry.h"
#include "config/run_params.h"
#include "moe/moe_params.h"

namespace moehub::test {

inline ParamRegistry workload_registry() {
  ParamRegistry r;
  declare_run_params(r);
  declare_workload_params(r);
  declare_model_params(r);
  return r;
}

inline std::filesystem::path model_preset(const std::string& name) {
  return std::filesystem::path(MOEHUB_SOURCE_CONFIG_DIR) / "models" / (name + ".toml");
}

// The run and workload sections as defaults.toml gives them, then `extra` TOML on top.
inline Config workload_config(const ParamRegistry& registry, const std::string& model, const std::string& extra = "") {
  Config c(registry);
  c.merge_text(R"(
[run]
hardware = "dgx-h800"
model = "x"
gpus = 8
tokens = 8192
seed = 1
systems = "all"
functional = false
time_limit = "1s"
memory_budget = "0B"
check = false
[workload]
imbalance_std = 0.0
routing_trace = ""
trace_layer = 0
expert_map = []
redundant_experts = 0
placement_load = "this-layer"
placement_window = 1
placement_correlation = 0.0
[parallel]
tp = 1
)",
               "test-defaults");
  c.merge_file(model_preset(model), {"description", "source", "base"});
  if (!extra.empty()) c.merge_text(extra, "test");
  c.resolve();
  return c;
}

}  // namespace moehub::test
