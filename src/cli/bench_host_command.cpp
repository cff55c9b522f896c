// `moehub bench host`: one host thread launching N empty kernels back to back on one stream of
// an idle GPU, the setting in which launch overhead is measured (e.g. Hazy Research's
// back-to-back kernels on H100): per_kernel_us = (end of the last kernel - first issue) / N.

#include <charconv>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "config/config_builder.h"
#include "gpu/gpu.h"
#include "gpu/host.h"
#include "sim/error.h"

namespace moehub {
namespace {

struct BenchHostOptions {
  ConfigRequest request;
  std::string kernels = "1000", hardware;
  bool framework_ops = false;
  std::string format = "table";
};

int bench_host(const CliContext& ctx, BenchHostOptions& o) {
  uint64_t n = 0;
  const auto [p, ec] = std::from_chars(o.kernels.data(), o.kernels.data() + o.kernels.size(), n);
  if (ec != std::errc() || p != o.kernels.data() + o.kernels.size() || n == 0 || n > 10000000) {
    throw UserError("--kernels", fmt::format("expected a number of kernels from 1 to 10000000, got '{}'", o.kernels));
  }
  if (!o.hardware.empty()) o.request.flags.push_back({"run.hardware", o.hardware, "--hardware"});
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, o.request);
  Simulator sim;
  gpu::Gpu gpu(sim, gpu::GpuConfig::from(cfg), 0, nullptr);
  gpu::Host host(sim, gpu::HostConfig::from(cfg));
  gpu::Stream& stream = gpu.create_stream("bench");
  gpu::KernelId last = 0;
  for (uint64_t i = 0; i < n; ++i) {
    // An empty kernel: one block of no work, so only the launch path is timed.
    gpu::KernelSpec spec;
    spec.name = "empty";
    spec.blocks = 1;
    spec.program = std::make_shared<gpu::StepListProgram>(std::vector<gpu::Step>{});
    if (o.framework_ops) {
      host.framework_op();
    }
    last = host.launch(stream, std::move(spec));
  }
  sim.run();
  const Time end = *gpu.kernel_times(last).ended;
  const double per_kernel_us = end.us() / static_cast<double>(n);
  if (o.format == "json") {
    nlohmann::json j{{"kernels", n}, {"framework_ops", o.framework_ops}, {"time_ps", end.ps()},
                     {"per_kernel_us", per_kernel_us}, {"host_busy_us", host.busy_time().us()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} empty kernels{} from one host thread\n", n, o.framework_ops ? " as framework ops" : "");
    std::cout << fmt::format("  {:<14}{:.3f}\n  {:<14}{:.3f}\n", "time_us", end.us(), "per_kernel_us", per_kernel_us);
  }
  return 0;
}

}  // namespace

void add_bench_host_command(CLI::App& bench, CliContext& ctx) {
  auto* cmd = bench.add_subcommand("host", "Time N empty kernels launched back to back from one host thread");
  auto o = std::make_shared<BenchHostOptions>();
  cmd->add_option("--kernels", o->kernels, "Kernels to launch (default 1000)");
  cmd->add_flag("--framework-ops", o->framework_ops, "Launch each as an eager framework op (host.framework_op_cost first)");
  cmd->add_option("--hardware", o->hardware, "Hardware preset name or TOML file (default: dgx-h800)");
  cmd->add_option("--config", o->request.config_files, "Experiment TOML file(s) applied over the presets");
  cmd->add_option("--set", o->request.assignments, "Override any parameter: KEY=VALUE (repeatable)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return bench_host(ctx, *o); }; });
}

}  // namespace moehub
