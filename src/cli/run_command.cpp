// `moehub run`: simulate one MoE layer under the chosen systems and report per-system results.

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/config_builder.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "report/output_file.h"
#include "report/run_report.h"
#include "sim/error.h"

namespace moehub {
namespace {

struct RunOptions {
  ConfigRequest request;
  std::string model, hardware, gpus, tokens, imbalance, routing_trace, systems, seed;
  bool functional = false;
  std::string trace_file;
  std::string output_file;
  std::string format = "table";
};

// Systems implemented so far; `run.systems` may name only these.
std::vector<std::string> implemented_systems() { return {}; }

std::vector<std::string> select_systems(const std::string& spec) {
  const std::vector<std::string> known = implemented_systems();
  if (spec == "all") return known;
  std::vector<std::string> chosen;
  std::stringstream ss(spec);
  for (std::string name; std::getline(ss, name, ',');) {
    if (name.empty()) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw UserError("run.systems", fmt::format("unknown or not yet implemented system '{}' (available: {})", name,
                                                 known.empty() ? "none yet" : fmt::format("{}", fmt::join(known, ", "))));
    }
    chosen.push_back(name);
  }
  if (chosen.empty()) throw UserError("run.systems", "names no system");
  return chosen;
}

int run(const CliContext& ctx, RunOptions& o) {
  const auto flag = [&](const std::string& value, const char* path, const char* name) {
    if (!value.empty()) o.request.flags.push_back({path, value, name});
  };
  flag(o.hardware, "run.hardware", "--hardware");
  flag(o.model, "run.model", "--model");
  flag(o.gpus, "run.gpus", "--gpus");
  flag(o.tokens, "run.tokens", "--tokens");
  flag(o.seed, "run.seed", "--seed");
  flag(o.systems, "run.systems", "--systems");
  flag(o.imbalance, "workload.imbalance_std", "--imbalance");
  flag(o.routing_trace, "workload.routing_trace", "--routing-trace");
  if (o.functional) o.request.flags.push_back({"run.functional", "true", "--functional"});

  const auto start = std::chrono::steady_clock::now();
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, o.request);
  const std::vector<std::string> systems = select_systems(cfg.string("run.systems"));
  // The routed workload of the simulated layer (bad shapes, placements or traces fail here).
  const ModelShape model = ModelShape::from(cfg);
  const Workload workload = Workload::build(WorkloadConfig::from(cfg), model);

  // Output files are opened before simulating so that a bad path fails fast; they appear
  // only after everything succeeded.
  std::optional<OutputFile> output;
  if (!o.output_file.empty()) output.emplace(o.output_file, "--output");
  std::optional<OutputFile> trace;
  if (!o.trace_file.empty()) trace.emplace(o.trace_file, "--trace");

  RunReport report;
  report.config = cfg.to_json();
  report.workload = workload.summary();
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (trace) {
    // Chrome/Perfetto trace JSON; events appear as the systems that produce them land.
    trace->stream() << nlohmann::json{{"traceEvents", nlohmann::json::array()}, {"displayTimeUnit", "ns"}}.dump()
                    << "\n";
  }
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
  cmd->add_option("--model", o->model, "Model preset name or TOML file (default: mixtral-8x7b)");
  cmd->add_option("--hardware", o->hardware, "Hardware preset name or TOML file (default: dgx-h800)");
  cmd->add_option("--gpus", o->gpus, "GPUs in the expert-parallel group (default 8)");
  cmd->add_option("--tokens", o->tokens, "Tokens over all GPUs (default 8192)");
  cmd->add_option("--imbalance", o->imbalance, "Std of the per-expert token fraction (default 0)");
  cmd->add_option("--routing-trace", o->routing_trace, "Routing trace file (CSV or JSONL)");
  cmd->add_option("--systems", o->systems, "Comma-separated systems, or 'all'");
  cmd->add_option("--seed", o->seed, "Random seed (default 1)");
  cmd->add_option("--config", o->request.config_files, "Experiment TOML file(s) applied over the presets");
  cmd->add_option("--set", o->request.assignments, "Override any parameter: KEY=VALUE (repeatable)");
  cmd->add_option("--trace", o->trace_file, "Write a Chrome/Perfetto timeline (JSON) to FILE");
  cmd->add_flag("--functional", o->functional, "Carry real data through the datapath and check it");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("-o,--output", o->output_file, "Write the report to FILE instead of stdout");
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return run(ctx, *o); }; });
}

}  // namespace moehub
