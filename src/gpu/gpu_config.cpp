#include "gpu/gpu_config.h"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "sim/error.h"

namespace moehub::gpu {
namespace {

uint32_t u32(const Config& c, const char* key) { return c.integer_u32(key); }

void require(bool ok, const char* key, const std::string& reason) {
  if (!ok) throw UserError(key, reason);
}

// Nearest integer, so that e.g. 0.7 x 7495680000000 is 5246976000000 and not one less.
uint64_t scale(uint64_t value, double fraction) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(value) * fraction));
}

}  // namespace

GpuConfig GpuConfig::from(const Config& c) {
  GpuConfig g;
  g.name = c.string("gpu.name");
  g.sm_count = u32(c, "gpu.sm_count");
  g.clock = c.frequency("gpu.clock");
  g.hbm_bandwidth = c.bandwidth("gpu.hbm_bandwidth");
  g.hbm_efficiency = c.real("gpu.hbm_efficiency");
  g.tensor_flops_per_clock = static_cast<uint64_t>(c.integer("gpu.tensor_flops_per_clock"));
  g.tensor_clock = c.frequency("gpu.tensor_clock");
  g.gemm_efficiency = c.real("gpu.gemm_efficiency");
  if (c.string("gpu.gemm_model") == "calibrated") {
    const std::string file = c.string("gpu.gemm_calibration");
    if (file.empty()) throw UserError("gpu.gemm_calibration", "must name a file when gpu.gemm_model = \"calibrated\"");
    if (!std::filesystem::is_regular_file(file)) throw UserError("gpu.gemm_calibration", fmt::format("no such file '{}'", file));
    g.gemm_calibration = std::make_shared<const GemmCalibration>(GemmCalibration::load(file));
  }
  g.gemm_tile = {u32(c, "gpu.gemm_tile_m"), u32(c, "gpu.gemm_tile_n"), u32(c, "gpu.gemm_tile_k")};
  g.gemm_threads_per_block = u32(c, "gpu.gemm_threads_per_block");
  g.gemm_blocks_per_sm = u32(c, "gpu.gemm_blocks_per_sm");
  g.max_blocks_per_sm = u32(c, "gpu.max_blocks_per_sm");
  g.max_threads_per_sm = u32(c, "gpu.max_threads_per_sm");
  g.shared_memory_per_sm = c.bytes("gpu.shared_memory_per_sm");
  g.registers_per_sm = u32(c, "gpu.registers_per_sm");
  g.sm_store_bytes_per_clock = static_cast<uint64_t>(c.integer("gpu.sm_store_bytes_per_clock"));
  g.launch_gap = c.time("gpu.launch_gap");
  g.event_wait_latency = c.time("gpu.event_wait_latency");
  g.poll_latency = c.time("gpu.poll_latency");
  g.poll_sleep = c.time("gpu.poll_sleep");
  g.poll_bytes = c.bytes("gpu.poll_bytes");
  g.trace_sm_group = u32(c, "gpu.trace_sm_group");
  g.validate();
  return g;
}

void GpuConfig::validate() const {
  require(sm_count > 0, "gpu.sm_count", "must be at least 1");
  require(clock.hertz() > 0, "gpu.clock", "must be positive");
  require(hbm_bandwidth.bytes_per_second() > 0, "gpu.hbm_bandwidth", "must be positive");
  require(hbm_efficiency > 0 && hbm_efficiency <= 1, "gpu.hbm_efficiency", "must be in (0, 1]");
  require(hbm_achievable().bytes_per_second() > 0, "gpu.hbm_efficiency", "leaves no bandwidth");
  require(tensor_flops_per_clock > 0, "gpu.tensor_flops_per_clock", "must be at least 1");
  require(tensor_clock.hertz() > 0, "gpu.tensor_clock", "must be positive");
  require(gemm_efficiency > 0 && gemm_efficiency <= 1, "gpu.gemm_efficiency", "must be in (0, 1]");
  require(sm_tensor_flops_per_second() > 0, "gpu.gemm_efficiency", "leaves no tensor throughput");
  require(gemm_tile.m > 0, "gpu.gemm_tile_m", "must be at least 1");
  require(gemm_tile.n > 0, "gpu.gemm_tile_n", "must be at least 1");
  require(gemm_tile.k > 0, "gpu.gemm_tile_k", "must be at least 1");
  require(max_blocks_per_sm > 0, "gpu.max_blocks_per_sm", "must be at least 1");
  require(max_threads_per_sm > 0, "gpu.max_threads_per_sm", "must be at least 1");
  require(shared_memory_per_sm > 0, "gpu.shared_memory_per_sm", "must be positive");
  require(registers_per_sm > 0, "gpu.registers_per_sm", "must be at least 1");
  require(gemm_threads_per_block > 0, "gpu.gemm_threads_per_block", "must be at least 1");
  require(gemm_threads_per_block <= max_threads_per_sm, "gpu.gemm_threads_per_block",
          fmt::format("{} threads do not fit on an SM of {} (gpu.max_threads_per_sm)", gemm_threads_per_block,
                      max_threads_per_sm));
  require(gemm_blocks_per_sm > 0, "gpu.gemm_blocks_per_sm", "must be at least 1");
  require(sm_store_bytes_per_clock > 0, "gpu.sm_store_bytes_per_clock", "must be at least 1");
  require(launch_gap >= Time::zero(), "gpu.launch_gap", "must not be negative");
  require(event_wait_latency >= Time::zero(), "gpu.event_wait_latency", "must not be negative");
  // A poll that takes no time would spin forever at one instant.
  require(poll_latency + poll_sleep > Time::zero(), "gpu.poll_latency", "poll_latency + poll_sleep must be positive");
  require(poll_latency >= Time::zero(), "gpu.poll_latency", "must not be negative");
  require(poll_sleep >= Time::zero(), "gpu.poll_sleep", "must not be negative");
  require(poll_bytes > 0, "gpu.poll_bytes", "must be positive");
  require(trace_sm_group > 0, "gpu.trace_sm_group", "must be at least 1");
}

Bandwidth GpuConfig::hbm_achievable() const {
  return Bandwidth::bytes_per_second(scale(hbm_bandwidth.bytes_per_second(), hbm_efficiency));
}

uint64_t GpuConfig::sm_tensor_peak_flops_per_second() const { return tensor_flops_per_clock * tensor_clock.hertz(); }

uint64_t GpuConfig::sm_tensor_flops_per_second() const { return scale(sm_tensor_peak_flops_per_second(), gemm_efficiency); }

Bandwidth GpuConfig::sm_store_bandwidth() const {
  return Bandwidth::bytes_per_second(sm_store_bytes_per_clock * clock.hertz());
}

HostConfig HostConfig::from(const Config& c) {
  HostConfig h;
  h.issue_cost = c.time("host.issue_cost");
  h.sync_wakeup = c.time("host.sync_wakeup");
  h.d2h_latency = c.time("host.d2h_latency");
  h.d2h_bandwidth = c.bandwidth("host.d2h_bandwidth");
  h.framework_op_cost = c.time("host.framework_op_cost");
  h.nccl_call_cost = c.time("host.nccl_call_cost");
  h.validate();
  return h;
}

void HostConfig::validate() const {
  require(issue_cost >= Time::zero(), "host.issue_cost", "must not be negative");
  require(sync_wakeup >= Time::zero(), "host.sync_wakeup", "must not be negative");
  require(d2h_latency >= Time::zero(), "host.d2h_latency", "must not be negative");
  require(d2h_bandwidth.bytes_per_second() > 0, "host.d2h_bandwidth", "must be positive");
  require(framework_op_cost >= Time::zero(), "host.framework_op_cost", "must not be negative");
  require(nccl_call_cost >= Time::zero(), "host.nccl_call_cost", "must not be negative");
}

}  // namespace moehub::gpu
