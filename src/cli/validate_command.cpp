// `moehub validate FILE`: checks a preset or experiment file against every declared parameter.
// A figure file (one with a [figure] table, read by `moehub figures`) is checked as a figure:
// its sections, and the resolved configuration and routed workload of every point of its full
// and quick sweeps. A sweep file (a [sweep] without [figure], read by `moehub sweep`) likewise.

#include <fmt/format.h>
#include <iostream>

#include "cli/command.h"
#include "config/config_builder.h"
#include "figures/config_source.h"
#include "figures/figure_spec.h"
#include "figures/sweep_file.h"
#include "figures/sweep_runner.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

// A point's configuration and workload, and its configuration under each variant's settings
// (the variant's system checks the rest when it runs).
void check_point(const ConfigSource& configs, const SweepAxes& axes, const SweepPoint& p) {
  check_point_workload(configs.build(p.settings), p, "");  // each system is checked when it runs
  for (const SweepVariant& v : axes.variants) configs.build(system_run(axes, p, v.name).second.settings);
}

int validate_figure(const CliContext& ctx, const std::string& file) {
  const FigureSpec spec = load_figure_spec(file);
  const ConfigSource configs(ctx.catalog(), *ctx.registry);
  size_t points[2] = {0, 0};
  require_sweep_systems(spec);
  for (bool quick : {false, true}) {
    for (const SweepPoint& p : spec.points(quick)) {
      check_point(configs, spec.axes(quick), p);
      ++points[quick];
    }
  }
  if (spec.kind == "area") {
    configs.build({{"run.hardware", spec.hardware, file + ": figure.hardware"}});
  }
  std::cout << fmt::format("{}: ok (figure '{}' of kind {}: {} points resolved ({} in --quick)", file, spec.name,
                           spec.kind, points[0], points[1]);
  std::cout << ")\n";
  return 0;
}

// A sweep file: its sections and plots, and every point's configuration and routed workload.
int validate_sweep(const CliContext& ctx, const std::string& file) {
  const SweepFile sweep = load_sweep_file(file);
  require_registered_systems(sweep);
  const ConfigSource configs(ctx.catalog(), *ctx.registry);
  size_t points[2] = {0, 0};
  for (bool quick : {false, true}) {
    for (const SweepPoint& p : sweep.points(quick)) {
      check_point(configs, quick ? sweep.quick : sweep.sweep, p);
      ++points[quick];
    }
  }
  std::cout << fmt::format("{}: ok (sweep '{}': {} points resolved ({} in --quick), {} plot(s))\n", file, sweep.name,
                           points[0], points[1], sweep.plots.size());
  return 0;
}

}  // namespace

void add_validate_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("validate", "Check a config file: unknown keys, types, ranges, units");
  auto file = std::make_shared<std::string>();
  cmd->add_option("FILE", *file, "TOML file (hardware, model, experiment, figure or sweep)")->required();
  cmd->callback([&ctx, file] {
    ctx.action = [&ctx, file]() -> int {
      if (is_figure_file(*file)) return validate_figure(ctx, *file);
      if (is_sweep_file(*file)) return validate_sweep(ctx, *file);
      ConfigRequest req;
      req.config_files.push_back(*file);
      const Config c = build_config(ctx.catalog(), *ctx.registry, req);
      std::cout << fmt::format("{}: ok ({} parameters resolved)\n", *file, ctx.registry->all().size());
      return 0;
    };
  });
}

}  // namespace moehub
