#pragma once
// The runs behind one figure, arranged as [point][system], and what a figure produces:
// CSV tables and a plot. The builders for each kind live in sweep_figures.cpp and
// table_figure.cpp.

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "figures/config_source.h"
#include "figures/figure_spec.h"
#include "figures/plot.h"
#include "figures/run_executor.h"
#include "platform/layer_result.h"

namespace moehub {

enum class RunStatus { Ok, NotImplemented, Unsupported, Failed };
const char* run_status_name(RunStatus s);  // "ok", "not implemented", "unsupported", "failed"

struct RunCell {
  RunStatus status = RunStatus::NotImplemented;
  LayerResult result;  // empty unless Ok
  double moe_flops = 0;
  std::string error;   // why not Ok (a system's refusal or a fault)
};

struct FigureRuns {
  const FigureSpec* spec = nullptr;
  std::vector<SweepPoint> points;  // with a seeds axis: one per point, its first seed standing for all
  std::vector<std::string> systems;      // as the sweep lists them
  std::vector<std::vector<RunCell>> cells;  // [point][system]: with seeds, Ok only if every seed ran
  std::vector<std::vector<std::vector<RunCell>>> seeds;  // [point][system][seed]; empty without a seeds axis

  // A numeric result field of one run (result_fields(), or "moe_flops"), the mean over the
  // point's seeds where the sweep has them; nothing if the run is missing, failed or has no value.
  std::optional<double> value(size_t point, const std::string& system, const std::string& field) const;
  // Min and max of the field over the point's seeds (nothing without several seeds with values).
  std::optional<std::pair<double, double>> spread(size_t point, const std::string& system,
                                                  const std::string& field) const;
  const RunCell* cell(size_t point, const std::string& system) const;
  // Systems with at least one successful run, in sweep order.
  std::vector<std::string> systems_with_data() const;
  // "not implemented: a, b; failed runs: c" (empty when every run succeeded).
  std::string missing_note() const;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string to_csv() const;  // RFC 4180 quoting where needed
};

struct FigureOutput {
  std::vector<std::pair<std::string, CsvTable>> csvs;  // file name (e.g. "fig12.csv") and data
  std::optional<Plot> plot;                            // drawn as <figure>.svg
  std::vector<std::pair<std::string, Plot>> plots;     // kind "sweep": file stem and plot
};

// What the builders need besides the runs.
struct FigureContext {
  std::map<std::string, FigureRuns> runs;  // every sweep figure that ran, by name
  const ConfigSource* configs = nullptr;  // resolves a figure's own settings (its hardware)
  std::filesystem::path systems_source_dir;  // src/systems of the checkout; empty if unknown
  std::vector<std::string> registered_systems;
  bool quick = false;  // the runs are the [sweep.quick] subset
};

FigureOutput build_figure(const FigureSpec& spec, const FigureContext& context);

// Kinds with sweeps (sweep_figures.cpp), sweep files (sweep_output.cpp) and the others
// (table_figure.cpp).
FigureOutput build_sweep_figure(const FigureSpec& spec, const FigureRuns& runs, const ConfigSource& configs);
FigureOutput build_table_figure(const FigureSpec& spec, const FigureContext& context);
FigureOutput build_area_figure(const FigureSpec& spec, const FigureContext& context);

// The sweep's runs arranged as [point][system] (and [seed] when the axes have seeds, which vary
// fastest): one request per run, `where[i]` = (point, system, seed) of requests[i].
struct RunIndex {
  size_t point, system, seed;
};
FigureRuns arrange_runs(const FigureSpec* spec, const SweepAxes& axes, std::vector<SweepPoint> all_points,
                        std::vector<RunRequest>& requests, std::vector<RunIndex>& where);
// Fills a cell from a run's outcome (and the seeds' common cell when they are all in).
void fill_run(FigureRuns& runs, const RunIndex& at, const RunOutcome& outcome);

// Number formatting shared by the CSVs: empty for a missing value.
std::string csv_number(std::optional<double> v);

}  // namespace moehub
