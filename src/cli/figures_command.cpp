// `moehub figures --out DIR [--quick] [--jobs N] [--jobs-memory SIZE] [FIGURE...]`: runs the sweeps of the paper's
// Sections VI and VII from configs/experiments/, caches every run, and writes per figure a CSV,
// an SVG and a PNG (gnuplot; a sweep file: its CSVs and [[plot]]s), plus RESULTS.md. How each
// figure is computed: docs/figures.md. Under `mpirun -np N` (N > 1) rank 0 does all this and
// ranks 1..N-1 simulate (figures/distributed.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "cli/command.h"
#include "config/config_builder.h"
#include "figures/distributed.h"
#include "figures/figure_data.h"
#include "figures/results_markdown.h"
#include "figures/sweep_output.h"
#include "figures/sweep_runner.h"
#include "report/output_file.h"
#include "sim/error.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

struct FiguresOptions {
  std::string out;
  bool quick = false;
  int jobs = 0;
  bool jobs_given = false;  // otherwise one job per core
  std::string jobs_memory;  // --jobs-memory: a size ("8GiB"); empty: no cap
  std::vector<std::string> figures;
  std::string experiments;  // default: <config-dir>/experiments
  std::string results_md;   // default: <out>/RESULTS.md
  std::string source_dir;   // default: <config-dir>/../src/systems
};

}  // namespace

namespace {

// The chosen figures and, after them, the figures their tables read.
std::vector<const FigureSpec*> select(const std::vector<FigureSpec>& specs, const std::vector<std::string>& names) {
  std::vector<std::string> known;
  for (const auto& s : specs) known.push_back(s.name);
  const auto find = [&](const std::string& name, const std::string& where) -> const FigureSpec* {
    for (const auto& s : specs) {
      if (s.name == name) return &s;
    }
    throw UserError(where, fmt::format("unknown figure '{}' (known: {})", name, fmt::join(known, ", ")));
  };
  std::vector<const FigureSpec*> chosen;
  const auto add = [&](const FigureSpec* s) {
    if (std::find(chosen.begin(), chosen.end(), s) == chosen.end()) chosen.push_back(s);
  };
  if (names.empty()) {
    for (const auto& s : specs) add(&s);
  } else {
    for (const auto& n : names) add(find(n, "figures"));
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    for (const auto& dep : chosen[i]->depends_on()) {
      const FigureSpec* d = find(dep, chosen[i]->file.string() + ": headline.figure");
      if (!d->has_sweep()) throw UserError(chosen[i]->file.string(), fmt::format("headline figure '{}' has no sweep", dep));
      add(d);
    }
  }
  return chosen;
}

// Every (point, system) of every chosen sweep, with the figure cell each one fills.
using CellOf = std::pair<std::string, RunIndex>;  // figure, (point, system, seed)
std::vector<RunRequest> collect_runs(const std::vector<const FigureSpec*>& chosen, bool quick, FigureContext& context,
                                     std::vector<CellOf>& where) {
  std::vector<RunRequest> requests;
  for (const FigureSpec* spec : chosen) {
    if (!spec->has_sweep()) continue;
    std::vector<RunIndex> at;
    // A sweep file's rows are one per seed, as `moehub sweep` writes them.
    SweepAxes axes = spec->axes(quick);
    if (spec->kind == "sweep") axes.seeds.clear();
    FigureRuns runs = arrange_runs(spec, axes, spec->points(quick), requests, at);
    for (const RunIndex& a : at) where.emplace_back(spec->name, a);
    context.runs.emplace(spec->name, std::move(runs));
  }
  return requests;
}

void fill_cells(const std::vector<RunOutcome>& outcomes, const std::vector<CellOf>& where, FigureContext& context) {
  for (size_t i = 0; i < outcomes.size(); ++i) fill_run(context.runs.at(where[i].first), where[i].second, outcomes[i]);
  for (auto& [name, runs] : context.runs) {
    if (runs.spec->kind == "sweep") add_point_comparisons(runs);  // as `moehub sweep` does
  }
}

// The CSVs and plots of every chosen figure, then RESULTS.md.
size_t write_figures(const std::vector<const FigureSpec*>& chosen, const FigureContext& context,
                     const FiguresOptions& o) {
  const fs::path out_dir(o.out);
  std::vector<WrittenFigure> written;
  for (const FigureSpec* spec : chosen) {
    WrittenFigure w;
    w.spec = spec;
    w.output = build_figure(*spec, context);
    if (spec->has_sweep()) w.note = context.runs.at(spec->name).missing_note();
    for (const auto& [file, table] : w.output.csvs) write_output_file(out_dir / file, table.to_csv(), "--out");
    if (w.output.plot) render_plot(*w.output.plot, out_dir, spec->name);
    for (const auto& [stem, plot] : w.output.plots) render_plot(plot, out_dir, stem);
    std::cerr << fmt::format("figures: wrote {}{}\n", spec->name, w.note.empty() ? "" : " (" + w.note + ")");
    written.push_back(std::move(w));
  }
  const fs::path md = o.results_md.empty() ? out_dir / "RESULTS.md" : fs::path(o.results_md);
  std::string prefix = fs::absolute(out_dir).lexically_normal().lexically_relative(
                           fs::absolute(md).parent_path().lexically_normal()).generic_string();
  prefix = prefix.empty() || prefix == "." ? "" : prefix + "/";
  write_output_file(md, results_markdown(written, context, prefix, o.quick), "--out");
  return written.size();
}

// Everything but the simulations, which `executor` carries out (here or on MPI workers).
int make_figures(const CliContext& ctx, const FiguresOptions& o, const ConfigSource& configs, RunExecutor& executor,
                 std::chrono::steady_clock::time_point start) {
  const fs::path config_dir = ctx.catalog().config_dir();
  const fs::path experiments = o.experiments.empty() ? config_dir / "experiments" : fs::path(o.experiments);
  const std::vector<FigureSpec> specs = load_figure_specs(experiments);
  if (specs.empty()) throw UserError("--experiments", fmt::format("no figure files in '{}'", experiments.string()));
  const std::vector<const FigureSpec*> chosen = select(specs, o.figures);
  for (const FigureSpec* spec : chosen) require_sweep_systems(*spec);

  const fs::path out_dir(o.out);
  std::error_code ec;
  // A start that fails (a bad point in a sweep) leaves no folder behind that it created.
  const bool out_existed = fs::exists(out_dir, ec), cache_existed = fs::exists(out_dir / "cache", ec);
  const auto remove_created = [&] {
    if (!cache_existed) fs::remove(out_dir / "cache", ec);  // only if still empty
    if (!out_existed) fs::remove(out_dir, ec);
  };
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir, ec)) throw UserError("--out", fmt::format("cannot create '{}'", o.out));

  FigureContext context;
  context.configs = &configs;
  context.quick = o.quick;
  context.systems_source_dir = o.source_dir.empty() ? (config_dir / "..").lexically_normal() / "src" / "systems"
                                                     : fs::path(o.source_dir);
  for (const auto& s : all_systems()) context.registered_systems.push_back(s.name);
  std::vector<CellOf> where;
  const std::vector<RunRequest> requests = collect_runs(chosen, o.quick, context, where);

  const ResultCache cache(out_dir / "cache");
  RunnerOptions options;
  options.progress = &std::cerr;
  options.terminal = ::isatty(::fileno(stderr)) != 0;
  SweepRunner runner(configs, cache, binary_fingerprint(), executor, options);
  try {
    fill_cells(runner.run(requests), where, context);
  } catch (...) {
    remove_created();
    throw;
  }
  const size_t written = write_figures(chosen, context, o);

  const SweepSummary& sum = runner.summary();
  std::cerr << fmt::format("figures: {} figure(s) in {}: {} runs computed, {} cached, {} unsupported, {} failed; {:.1f} s\n",
                           written, out_dir.string(), sum.computed, sum.cached, sum.unsupported, sum.failed,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return sum.failed ? 1 : 0;
}

int run_figures(const CliContext& ctx, const FiguresOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.jobs_given && o.jobs < 1) {
    throw UserError("--jobs", fmt::format("expected a positive number of jobs, got {}", o.jobs));
  }
  const unsigned jobs = o.jobs_given ? static_cast<unsigned>(o.jobs) : std::max(1u, std::thread::hardware_concurrency());
  const ConfigSource configs(ctx.catalog(), *ctx.registry);
  // Under mpirun, the worker ranks only simulate: they return here without reading a figure file.
  return with_executor(configs, jobs, jobs_memory_cap(o.jobs_memory),
                       [&](RunExecutor& executor) { return make_figures(ctx, o, configs, executor, start); });
}

}  // namespace

void add_figures_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("figures", "Run the experiment folder's sweeps: Figs. 3-17, Section VII's sweep files, "
                                            "the table and the area");
  auto o = std::make_shared<FiguresOptions>();
  cmd->add_option("--out", o->out, "Folder for the CSVs, SVGs, PNGs, RESULTS.md and the run cache")->required();
  cmd->add_flag("--quick", o->quick, "Run the [sweep.quick] subset of every figure");
  auto* jobs = cmd->add_option("--jobs", o->jobs, "Runs at a time (default: one per core)");
  cmd->add_option("--jobs-memory", o->jobs_memory,
                  "Cap on the estimated memory of the runs in progress, e.g. 8GiB (default: none)");
  cmd->add_option("FIGURE", o->figures, "Figures to make (file stems in the experiments folder; default: all)");
  cmd->add_option("--experiments", o->experiments, "Folder of figure files (default: <config-dir>/experiments)");
  cmd->add_option("--results-md", o->results_md, "Where to write RESULTS.md (default: <out>/RESULTS.md)");
  cmd->add_option("--source-dir", o->source_dir, "src/systems folder for the code count (default: beside the config dir)");
  cmd->callback([&ctx, o, jobs] {
    o->jobs_given = jobs->count() > 0;
    ctx.action = [&ctx, o] { return run_figures(ctx, *o); };
  });
}

}  // namespace moehub
