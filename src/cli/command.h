#pragma once
// What every subcommand shares: options parsed before it runs, and the action it registers.

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/param_registry.h"
#include "config/preset_catalog.h"

namespace moehub {

struct CliContext {
  std::string config_dir;                // --config-dir, MOEHUB_CONFIG_DIR, or the build's default
  std::function<int()> action;           // set by the chosen subcommand's callback
  const ParamRegistry* registry = nullptr;

  PresetCatalog catalog() const { return PresetCatalog(config_dir); }
};

void add_run_command(CLI::App& app, CliContext& ctx);
void add_list_command(CLI::App& app, CliContext& ctx);
void add_validate_command(CLI::App& app, CliContext& ctx);
void add_verify_command(CLI::App& app, CliContext& ctx);
// `bench` and its sub-benchmarks (each adds itself to the `bench` subcommand).
void add_bench_command(CLI::App& app, CliContext& ctx);
void add_bench_net_command(CLI::App& bench, CliContext& ctx);
void add_bench_gemm_command(CLI::App& bench, CliContext& ctx);
void add_bench_host_command(CLI::App& bench, CliContext& ctx);
void add_area_command(CLI::App& app, CliContext& ctx);
void add_figures_command(CLI::App& app, CliContext& ctx);
void add_sweep_command(CLI::App& app, CliContext& ctx);
void add_accuracy_command(CLI::App& app, CliContext& ctx);
}  // namespace moehub
