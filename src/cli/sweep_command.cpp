// `moehub sweep FILE [--out DIR] [--quick] [--jobs N] [--jobs-memory SIZE] [--keep-going]`: runs a sweep file's
// points (any parameter, crossed or zipped, over seeds) for its systems, caches every run, and
// writes one tidy CSV row per (point, system), the seeds' spread and the file's plots.
// Format: docs/figures.md.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <memory>
#include <thread>
#include <unistd.h>

#include "cli/command.h"
#include "figures/distributed.h"
#include "figures/sweep_output.h"
#include "figures/sweep_runner.h"
#include "report/output_file.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string file;
  std::string out;  // default: out/<file stem>
  bool quick = false;
  bool keep_going = false;
  int jobs = 0;
  bool jobs_given = false;
  std::string jobs_memory;  // --jobs-memory: a size ("8GiB"); empty: no cap
};

// The runs as cells [point][system], every seed a point of its own (the rows of the tidy CSV).
FigureRuns arrange(const SweepFile& s, bool quick, SweepRunner& runner) {
  SweepAxes flat = s.axes(quick);
  flat.seeds.clear();
  std::vector<RunRequest> requests;
  std::vector<RunIndex> at;
  FigureRuns runs = arrange_runs(nullptr, flat, s.points(quick), requests, at);
  const std::vector<RunOutcome> outcomes = runner.run(requests);
  for (size_t i = 0; i < outcomes.size(); ++i) fill_run(runs, at[i], outcomes[i]);
  return runs;
}

// Runs without a result: each was reported as it finished; without --keep-going the first one
// stops the sweep here, before anything is written.
size_t check_failures(const SweepFile& sweep, const FigureRuns& runs, bool keep_going, bool& fault) {
  size_t failed = 0;
  for (size_t p = 0; p < runs.points.size(); ++p) {
    for (size_t s = 0; s < runs.systems.size(); ++s) {
      const RunCell& c = runs.cells[p][s];
      if (c.status == RunStatus::Ok) continue;
      if (!keep_going) {
        throw UserError(fmt::format("{}: sweep: {}, {}", sweep.file.string(), runs.points[p].label(), runs.systems[s]),
                        fmt::format("{} (--keep-going runs the other points)", c.error));
      }
      fault |= c.status == RunStatus::Failed;
      ++failed;
    }
  }
  return failed;
}

int make_sweep(const SweepOptions& o, const ConfigSource& configs, RunExecutor& executor,
               std::chrono::steady_clock::time_point start) {
  const SweepFile sweep = load_sweep_file(o.file);
  require_registered_systems(sweep);
  const fs::path out_dir = o.out.empty() ? fs::path("out") / sweep.name : fs::path(o.out);
  std::error_code ec;
  const bool out_existed = fs::exists(out_dir, ec);
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir, ec)) throw UserError("--out", fmt::format("cannot create '{}'", out_dir.string()));

  const ResultCache cache(out_dir / "cache");
  RunnerOptions options;
  options.progress = &std::cerr;
  options.terminal = ::isatty(::fileno(stderr)) != 0;
  options.keep_going = o.keep_going;
  options.bad_points_fail_runs = o.keep_going;
  options.tag = "sweep";
  SweepRunner runner(configs, cache, binary_fingerprint(), executor, options);
  FigureRuns runs;
  try {
    runs = arrange(sweep, o.quick, runner);
  } catch (...) {
    if (!out_existed) fs::remove_all(out_dir, ec);  // nothing was simulated: a bad point fails up front
    throw;
  }
  bool fault = false;
  const size_t failed = check_failures(sweep, runs, o.keep_going, fault);
  add_point_comparisons(runs);
  const SweepOutput output = build_sweep_output(sweep, o.quick, runs);
  for (const auto& [name, table] : output.csvs) write_output_file(out_dir / name, table.to_csv(), "--out");
  for (const auto& [stem, plot] : output.plots) render_plot(plot, out_dir, stem);

  const SweepSummary& sum = runner.summary();
  std::cerr << fmt::format("sweep: {}: {} points x {} systems in {}: {} runs computed, {} cached, {} without a result; "
                           "{:.1f} s\n",
                           sweep.name, runs.points.size(), runs.systems.size(), out_dir.string(), sum.computed,
                           sum.cached, failed,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (failed) return fault ? 1 : 2;
  return 0;
}

int run_sweep(const CliContext& ctx, const SweepOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.jobs_given && o.jobs < 1) throw UserError("--jobs", fmt::format("expected a positive number of jobs, got {}", o.jobs));
  const unsigned jobs = o.jobs_given ? static_cast<unsigned>(o.jobs) : std::max(1u, std::thread::hardware_concurrency());
  const ConfigSource configs(ctx.catalog(), *ctx.registry);
  // Under mpirun, the worker ranks only simulate: they return here without reading the file.
  return with_executor(configs, jobs, jobs_memory_cap(o.jobs_memory),
                       [&](RunExecutor& executor) { return make_sweep(o, configs, executor, start); });
}

}  // namespace

void add_sweep_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("sweep", "Run a sweep file: any parameters crossed or zipped, CSV rows and plots");
  auto o = std::make_shared<SweepOptions>();
  cmd->add_option("FILE", o->file, "Sweep file (configs/sweeps/*.toml) or figure file")->required();
  cmd->add_option("--out", o->out, "Folder for the CSVs, plots and the run cache (default: out/<file stem>)");
  cmd->add_flag("--quick", o->quick, "Run the [sweep.quick] subset");
  auto* jobs = cmd->add_option("--jobs", o->jobs, "Runs at a time (default: one per core)");
  cmd->add_option("--jobs-memory", o->jobs_memory,
                  "Cap on the estimated memory of the runs in progress, e.g. 8GiB (default: none)");
  cmd->add_flag("--keep-going", o->keep_going,
                "Run every point even when some fail; write what succeeded, report the rest, exit non-zero");
  cmd->callback([&ctx, o, jobs] {
    o->jobs_given = jobs->count() > 0;
    ctx.action = [&ctx, o] { return run_sweep(ctx, *o); };
  });
}

}  // namespace moehub
