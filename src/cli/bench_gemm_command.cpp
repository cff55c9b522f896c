// `moehub bench gemm`: one GEMM (or grouped GEMM) alone on an idle GPU of the chosen hardware,
// from its first thread block to its last (the launch gap excluded): time_us and tflops.

#include <charconv>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "config/config_builder.h"
#include "gpu/gemm.h"
#include "gpu/gpu.h"
#include "report/output_file.h"
#include "sim/error.h"
#include "sim/trace_recorder.h"

namespace moehub {
namespace {

struct BenchGemmOptions {
  ConfigRequest request;
  std::string m, n, k, groups = "1", hardware;
  std::string format = "table";
  std::string trace_file;
};

uint64_t positive(const std::string& text, const char* flag) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) {
    throw UserError(flag, fmt::format("expected a positive integer, got '{}'", text));
  }
  if (v == 0) throw UserError(flag, "must be at least 1");
  // cuBLAS and CUTLASS take GEMM extents as 32-bit ints.
  if (v > INT32_MAX) throw UserError(flag, fmt::format("must be at most {} (a 32-bit GEMM extent), got {}", INT32_MAX, v));
  return v;
}

int bench_gemm(const CliContext& ctx, BenchGemmOptions& o) {
  gpu::GemmProblem problem;
  const uint64_t m = positive(o.m, "--m");
  problem.n = positive(o.n, "--n");
  problem.k = positive(o.k, "--k");
  const uint64_t groups = positive(o.groups, "--groups");
  if (groups > 1000000) throw UserError("--groups", "must be at most 1000000");
  problem.group_rows.assign(groups, m);
  problem.element_bytes = 2;  // the benchmark is BF16

  if (!o.hardware.empty()) o.request.flags.push_back({"run.hardware", o.hardware, "--hardware"});
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, o.request);
  const gpu::GpuConfig gpu_cfg = gpu::GpuConfig::from(cfg);

  std::optional<OutputFile> trace_out;
  if (!o.trace_file.empty()) trace_out.emplace(o.trace_file, "--trace");
  TraceRecorder trace;

  Simulator sim;
  gpu::Gpu gpu(sim, gpu_cfg, 0, trace_out ? &trace : nullptr);
  const gpu::GemmModel model(gpu.config(), problem);
  const gpu::KernelId id = gpu.create_stream("bench").launch(model.kernel(groups > 1 ? "grouped gemm" : "gemm"));
  sim.run();
  const gpu::KernelTimes& t = gpu.kernel_times(id);
  const Time elapsed = *t.ended - *t.started;
  const double time_us = elapsed.us();
  const double tflops = elapsed > Time::zero() ? static_cast<double>(model.useful_flops()) / elapsed.seconds() / 1e12 : 0.0;
  const uint64_t slots = static_cast<uint64_t>(gpu_cfg.sm_count) * gpu.blocks_per_sm(model.block_shape());
  const double waves = static_cast<double>(model.tiles()) / static_cast<double>(slots);
  const double peak = static_cast<double>(gpu_cfg.sm_count) * static_cast<double>(gpu_cfg.sm_tensor_peak_flops_per_second()) / 1e12;

  if (o.format == "json") {
    nlohmann::json j{{"gpu", gpu_cfg.name},
                     {"m", m},
                     {"n", problem.n},
                     {"k", problem.k},
                     {"groups", groups},
                     {"tile", {{"m", gpu_cfg.gemm_tile.m}, {"n", gpu_cfg.gemm_tile.n}, {"k", gpu_cfg.gemm_tile.k}}},
                     {"tiles", model.tiles()},
                     {"waves", waves},
                     {"time_ps", elapsed.ps()},
                     {"time_us", time_us},
                     {"tflops", tflops},
                     {"peak_tflops", peak},
                     {"efficiency", model.efficiency()},
                     {"gemm_model", gpu_cfg.gemm_model},
                     {"hbm_bytes", gpu.memory().bytes_served()}};
    if (const gpu::GemmMeasurement* p = model.calibration_point()) {
      j["calibration"] = {{"file", gpu_cfg.gemm_calibration->source()}, {"line", p->line}, {"groups", p->groups},
                          {"m", p->m}, {"n", p->n}, {"k", p->k}, {"time_us", p->time.us()}};
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("gemm {} x {} x {}{} (bf16) on {}\n", m, problem.n, problem.k,
                             groups > 1 ? fmt::format(", {} groups", groups) : "", gpu_cfg.name);
    std::cout << fmt::format("  {:<12}{:.3f}\n", "time_us", time_us);
    std::cout << fmt::format("  {:<12}{:.1f}  (dense peak {:.1f})\n", "tflops", tflops, peak);
    std::cout << fmt::format("  {:<12}{}  ({}x{}x{}, {:.2f} waves)\n", "tiles", model.tiles(), gpu_cfg.gemm_tile.m,
                             gpu_cfg.gemm_tile.n, gpu_cfg.gemm_tile.k, waves);
    std::cout << fmt::format("  {:<12}{}\n", "hbm_bytes", gpu.memory().bytes_served());
    std::cout << fmt::format("  {:<12}{:.3f}  ({})\n", "efficiency", model.efficiency(), gpu_cfg.gemm_model);
    if (const gpu::GemmMeasurement* p = model.calibration_point()) {
      std::cout << fmt::format("  {:<12}{}:{} ({} x {} x {} x {} groups, {:.3f} us)\n", "calibration",
                               gpu_cfg.gemm_calibration->source(), p->line, p->m, p->n, p->k, p->groups, p->time.us());
    }
  }
  if (trace_out) {
    trace.write(trace_out->stream());
    trace_out->commit();
  }
  return 0;
}

}  // namespace

void add_bench_gemm_command(CLI::App& bench, CliContext& ctx) {
  auto* cmd = bench.add_subcommand("gemm", "Time one BF16 GEMM (or grouped GEMM) on an idle GPU");
  auto o = std::make_shared<BenchGemmOptions>();
  cmd->add_option("--m", o->m, "Rows of A and C (per group)")->required();
  cmd->add_option("--n", o->n, "Columns of B and C")->required();
  cmd->add_option("--k", o->k, "Inner dimension")->required();
  cmd->add_option("--groups", o->groups, "Groups of a grouped GEMM, each of M rows (default 1)");
  cmd->add_option("--hardware", o->hardware, "Hardware preset name or TOML file (default: dgx-h800)");
  cmd->add_option("--config", o->request.config_files, "Experiment TOML file(s) applied over the presets");
  cmd->add_option("--set", o->request.assignments, "Override any parameter: KEY=VALUE (repeatable)");
  cmd->add_option("--trace", o->trace_file, "Write a Chrome/Perfetto timeline (JSON) to FILE");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return bench_gemm(ctx, *o); }; });
}

}  // namespace moehub
