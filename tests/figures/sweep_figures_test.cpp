// Figs. 5 and 6 from hand-made runs: the builders read the MoE-Hub variants' own statistics.

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/param_registry.h"
#include "config/preset_catalog.h"
#include "figures/figure_data.h"
#include "systems/param_catalog.h"

namespace moehub {
namespace {

RunCell cell_with(nlohmann::json dispatch_latency) {
  RunCell c;
  c.status = RunStatus::Ok;
  c.result.layer = Time::from_us(100);
  c.result.stats = {{"hub", {{"dispatch_latency", std::move(dispatch_latency)}, {"polls", 7}}}};
  return c;
}

// Phi-3.5-MoE (16 experts) on 4 GPUs; the expert map, if any, set as `sweep.set` does it (a
// setting of the point, not one of its axes).
FigureRuns one_point(const FigureSpec& spec, const std::string& expert_map, RunCell cell) {
  FigureRuns r;
  r.spec = &spec;
  SweepPoint p;
  p.model = "phi-3.5-moe";
  p.gpus = 4;
  p.tokens = 64;
  p.settings = {{"run.model", "phi-3.5-moe", "test"}, {"run.gpus", "4", "test"}, {"run.tokens", "64", "test"}};
  if (!expert_map.empty()) p.settings.push_back({"workload.expert_map", expert_map, "test"});
  r.points.push_back(p);
  r.systems = {"mh-pkt"};
  r.cells = {{std::move(cell)}};
  return r;
}

std::string column(const CsvTable& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i) {
    if (t.header[i] == name) return t.rows.at(0).at(i);
  }
  return "missing";
}

// Each (column, value) of the table's first row.
void expect_columns(const CsvTable& t, const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [name, value] : expected) EXPECT_EQ(column(t, name), value) << name;
}

// The shipped presets as the figures read them.
struct ShippedPresets {
  ParamRegistry registry = build_param_registry();
  ConfigSource configs{PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry};
};

FigureSpec spec_of(const std::string& kind) {
  FigureSpec spec;
  spec.name = spec.kind = kind;
  return spec;
}

TEST(Fig5, GpuZeroAgainstTheMeanOfTheOthers) {
  const ShippedPresets presets;
  const ConfigSource& configs = presets.configs;
  const FigureSpec spec = spec_of("fig5");
  // GPU 0 holds 6 of 16 experts; GPUs 1-3 land their last rows at 10, 20, 30 us (mean 20).
  const FigureRuns r = one_point(spec, "[0,0,0,0,0,0,1,1,1,2,2,2,3,3,3,3]",
                                 cell_with({{"last_row_landed_us", {40.0, 10.0, 20.0, 30.0}},
                                            {"mean_row_landed_us", {25.0, 5.0, 6.0, 7.0}}}));
  const FigureOutput out = build_sweep_figure(spec, r, configs);
  const CsvTable& t = out.csvs.at(0).second;
  expect_columns(t, {{"gpu0_expert_share", "0.375"},
                     {"gpu0_last_row_us", "40"},
                     {"others_last_row_us", "20"},
                     {"gpu0_mean_row_us", "25"},
                     {"others_mean_row_us", "6"},
                     {"others_over_gpu0_last", "0.5"}});
  // Without an expert map the experts are split evenly: 4 of 16 on GPU 0.
  EXPECT_EQ(column(build_sweep_figure(spec, one_point(spec, "", cell_with({})), configs).csvs.at(0).second,
                   "gpu0_expert_share"),
            "0.25");
}

TEST(Fig6, SharesOfTheCommunicationLatencyLeaveTheSmWaitOut) {
  const ShippedPresets presets;
  const ConfigSource& configs = presets.configs;
  const FigureSpec spec = spec_of("fig6");
  const FigureRuns r = one_point(spec, "",
                                 cell_with({{"producer_us", 6.0}, {"tile_assembly_us", 3.0}, {"signal_us", 1.0},
                                            {"sm_wait_us", 50.0}, {"gemm1_polling_share", 0.25}}));
  const FigureOutput out = build_sweep_figure(spec, r, configs);
  const CsvTable& t = out.csvs.at(0).second;
  expect_columns(t, {{"producer_share_pct", "60"},
                     {"consumer_share_pct", "40"},
                     {"sm_wait_us", "50"},
                     {"gemm1_polling_share", "0.25"},
                     {"polls", "7"}});
}

}  // namespace
}  // namespace moehub
