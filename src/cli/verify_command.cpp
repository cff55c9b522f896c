// `moehub verify`: runs systems in functional mode on a small layer (configs/experiments/
// verify.toml, then the usual flags) and compares every token's output with the float32
// reference layer. Exit status 3 when any system mismatches or reads data before it arrived.

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <thread>

#include "config/run_params.h"
#include "cli/command.h"
#include "platform/resource_estimate.h"
#include "report/run_report.h"
#include "config/config_builder.h"
#include "cli/experiment_flags.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "platform/experiment.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

struct VerifyOptions {
  ExperimentFlags flags;
  std::string format = "table";
};

int verify(const CliContext& ctx, const VerifyOptions& o) {
  ConfigRequest request = o.flags.resolve_request();
  request.config_files.insert(request.config_files.begin(), "verify");
  request.flags.push_back({"run.functional", "true", "verify"});
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, request);
  const auto [systems, skipped] = select_run_systems(cfg);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  require_modelled(systems, cfg);
  check_resources(cfg, ModelShape::from(cfg), systems, static_cast<unsigned>(std::min<size_t>(threads, systems.size())));
  const Workload workload = Workload::build(WorkloadConfig::from(cfg), ModelShape::from(cfg));

  ExperimentOptions options;
  options.functional = true;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<SystemOutcome> outcomes = run_experiment(cfg, workload, systems, options);

  bool all = true;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : outcomes) {
    all = all && s.functional_passed;
    out.push_back({{"system", s.name}, {"functional", s.result.functional}});
  }
  if (o.format == "json") {
    nlohmann::json j{{"passed", all}, {"results", out}};
    if (!skipped.empty()) j["skipped"] = skipped_json(skipped);
    std::cout << j.dump(2) << "\n";
  } else {
    const int64_t redundant = workload.redundant_experts();
    const TpLayout& tp = workload.tp();
    std::cout << fmt::format("functional check: {} tokens, hidden {}, ffn {}, {} experts{} top-{}, {} GPUs{}\n",
                             workload.routing().tokens(), workload.model().hidden, workload.logical_model().ffn_hidden,
                             workload.logical_experts(), redundant ? fmt::format(" (+{} redundant)", redundant) : "",
                             workload.logical_model().top_k(), workload.tokens().gpus(),
                             tp.tp() > 1 ? fmt::format(" (EP {} x TP {})", tp.ep(), tp.tp()) : "");
    for (const auto& r : out) {
      const auto& f = r["functional"];
      std::cout << fmt::format("  {:<14} {}  max_abs_error {:.3g}  mismatched {}  early reads {}\n",
                               r["system"].get<std::string>(), f["passed"].get<bool>() ? "PASS" : "FAIL",
                               f["max_abs_error"].get<double>(), f["mismatched_elements"].get<int64_t>(),
                               f["ordering_violations"].get<uint64_t>());
      for (const auto& e : f["errors"]) std::cout << "      " << e.get<std::string>() << "\n";
    }
    if (!skipped.empty()) std::cout << skipped_line(skipped);
  }
  return all ? 0 : 3;
}

}  // namespace

void add_verify_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("verify", "Check each system's functional datapath against the reference layer");
  auto o = std::make_shared<VerifyOptions>();
  o->flags.add_to(*cmd);
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return verify(ctx, *o); }; });
}

}  // namespace moehub
