// `moehub run`: simulate one MoE layer under the chosen systems and report per-system results.

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

#include "config/run_params.h"
#include "cli/command.h"
#include "platform/resource_estimate.h"
#include "config/config_builder.h"
#include "cli/experiment_flags.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "report/output_file.h"
#include "report/run_report.h"
#include "sim/error.h"
#include "sim/live_line.h"
#include "sim/trace_recorder.h"
#include "platform/experiment.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

struct RunOptions {
  ExperimentFlags flags;
  bool functional = false;
  std::string trace_file;
  std::string output_file;
  std::string format = "table";
};

// On a terminal, one live line: each running system's simulated time and events, the systems
// done, the wall time. Redrawn at most every 0.2 s; the simulating threads call in.
class RunProgress {
 public:
  RunProgress(size_t systems) : systems_(systems) {}
  void update(const std::string& system, Time simulated, uint64_t events, bool finished) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished) {
      ++done_;
      running_.erase(system);
    } else {
      running_[system] = fmt::format("{} {:.0f} us ({:.1f} M events)", system, simulated.us(), events / 1e6);
    }
    const auto now = Clock::now();
    if (!finished && now - drawn_ < std::chrono::milliseconds(200)) return;
    drawn_ = now;
    std::string text = fmt::format("run: {}/{} systems done, {}", done_, systems_,
                                   duration_text(std::chrono::duration<double>(now - start_).count()));
    for (const auto& [name, state] : running_) text += "; " + state;
    line_.draw(text);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mutex_;
  size_t systems_, done_ = 0;
  std::map<std::string, std::string> running_;
  Clock::time_point start_ = Clock::now(), drawn_{};
  LiveLine line_{&std::cerr};
};

int run(const CliContext& ctx, RunOptions& o) {
  ConfigRequest request = o.flags.resolve_request();
  if (o.functional) request.flags.push_back({"run.functional", "true", "--functional"});

  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, request);
  const auto [systems, skipped] = select_run_systems(cfg);
  // The routed workload of the simulated layer (bad shapes, placements or traces fail here).
  const ModelShape model = ModelShape::from(cfg);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  require_modelled(systems, cfg);
  check_resources(cfg, model, systems, static_cast<unsigned>(std::min<size_t>(threads, systems.size())));
  const Workload workload = Workload::build(WorkloadConfig::from(cfg), model);

  // Output files are opened before simulating so that a bad path fails fast; they appear
  // only after everything succeeded.
  std::optional<OutputFile> output;
  if (!o.output_file.empty()) output.emplace(o.output_file, "--output");
  std::optional<OutputFile> trace;
  if (!o.trace_file.empty()) trace.emplace(o.trace_file, "--trace");

  ExperimentOptions options;
  options.trace = trace.has_value();
  options.functional = RunParams::from(cfg).functional;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  std::optional<RunProgress> progress;
  if (::isatty(::fileno(stderr))) {
    progress.emplace(systems.size());
    options.progress = [&progress](const std::string& system, Time t, uint64_t events, bool finished) {
      progress->update(system, t, events, finished);
    };
  }
  std::vector<SystemOutcome> outcomes = run_experiment(cfg, workload, systems, options);
  progress.reset();  // ends the live line before the report

  RunReport report;
  report.config = cfg.to_json();
  report.workload = workload.summary();
  report.skipped = skipped;
  for (auto& o : outcomes) {
    report.results.push_back(o.result);
    report.systems.push_back({o.name, o.events, o.sim_s});
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  report.threads = experiment_threads(options, systems.size());

  if (trace) {
    // One timeline: each system's GPUs are processes numbered from 1000 x its position.
    TraceRecorder all;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      all.append(*outcomes[i].trace, static_cast<int>(i) * 1000, outcomes[i].name + ": ");
    }
    all.write(trace->stream());
  }
  // A CSV holds result rows only: the systems `all` left out are said on stderr instead.
  if (o.format == "csv" && !skipped.empty()) std::cerr << skipped_line(skipped);
  if (output) {
    report.write(output->stream(), o.format);
  } else {
    report.write(std::cout, o.format);
  }
  if (trace) trace->commit();
  if (output) output->commit();
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("run", "Simulate one MoE layer under the chosen systems");
  auto o = std::make_shared<RunOptions>();
  o->flags.add_to(*cmd);
  cmd->add_option("--trace", o->trace_file, "Write a Chrome/Perfetto timeline (JSON) to FILE");
  cmd->add_flag("--functional", o->functional, "Carry real data through the datapath and check it");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "wide", "json", "csv"}));
  cmd->add_option("-o,--output", o->output_file, "Write the report to FILE instead of stdout");
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return run(ctx, *o); }; });
}

}  // namespace moehub
