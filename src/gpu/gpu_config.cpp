#include "gpu/gpu_config.h"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "config/param_table.h"
#include "gpu/gpu_params.h"
#include "sim/error.h"

namespace moehub::gpu {
namespace {

void require(bool ok, const char* key, const std::string& reason) {
  if (!ok) throw UserError(key, reason);
}

// Nearest integer, so that e.g. 0.7 x 7495680000000 is 5246976000000 and not one less.
uint64_t scale(uint64_t value, double fraction) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(value) * fraction));
}

}  // namespace

namespace {

// The SM's occupancy limits, its store path and the GPU-side latencies (gpu_table's second half,
// declared in this order so `list` keeps its order).
void add_sm_and_latency_params(ParamTable<GpuConfig>& t) {
  // Occupancy limits of one SM.
  t.integer("gpu.max_blocks_per_sm", &GpuConfig::max_blocks_per_sm, "Resident thread blocks per SM (hardware limit)")
      .at_least(1)
      .in_unit("blocks");
  t.integer("gpu.max_threads_per_sm", &GpuConfig::max_threads_per_sm, "Resident threads per SM")
      .at_least(1)
      .in_unit("threads");
  t.bytes("gpu.shared_memory_per_sm", &GpuConfig::shared_memory_per_sm,
          "Shared memory per SM available to thread blocks")
      .positive();
  t.integer("gpu.registers_per_sm", &GpuConfig::registers_per_sm, "32-bit registers per SM")
      .at_least(1)
      .in_unit("registers");

  // Stores to peers leave an SM at most this fast (bytes per SM clock).
  t.integer("gpu.sm_store_bytes_per_clock", &GpuConfig::sm_store_bytes_per_clock,
            "Load/store bytes one SM can issue per clock")
      .at_least(1)
      .at_most(1 << 20)
      .in_unit("B/clk");
  t.bytes("gpu.store_staging_bytes", &GpuConfig::store_staging_bytes,
          "Remote-store bytes the SM-to-hub path holds before stores back-pressure the SMs")
      .positive();

  // Launch and stream costs on the GPU side.
  t.time("gpu.launch_gap", &GpuConfig::launch_gap,
         "GPU-side latency from a kernel becoming eligible to its first thread block");
  t.time("gpu.event_wait_latency", &GpuConfig::event_wait_latency,
         "Latency of a cross-stream event wait after the event fires");

  // Polling a signal in device memory.
  t.time("gpu.poll_latency", &GpuConfig::poll_latency, "Latency of one flag load (an L2 round trip)");
  t.time("gpu.dram_latency", &GpuConfig::dram_latency,
         "Load-to-use latency of a dependent read that misses L2 and goes to HBM (e.g. the AAU's spill-table read)")
      .positive();
  t.time("gpu.poll_sleep", &GpuConfig::poll_sleep, "Sleep between polls (__nanosleep)");
  t.bytes("gpu.poll_bytes", &GpuConfig::poll_bytes, "Memory traffic of one poll").positive();
  t.choice("gpu.poll_model", &GpuConfig::poll_model,
           std::vector<std::pair<std::string, GpuConfig::PollModel>>{{"each", GpuConfig::PollModel::Each},
                                                                     {"parked", GpuConfig::PollModel::Parked}},
           "Polling waits: each flag load through the memory model (exact), or parked on the signal until the poll "
           "that sees it, the loads between charged in one write (a stated reduction)");

  t.integer("gpu.trace_sm_group", &GpuConfig::trace_sm_group, "SMs per timeline track (presentation only)")
      .at_least(1)
      .in_unit("SMs");
}

ParamTable<GpuConfig> gpu_table() {
  ParamTable<GpuConfig> t;
  t.string("gpu.name", &GpuConfig::name, "GPU product modelled");
  t.integer("gpu.sm_count", &GpuConfig::sm_count, "Streaming multiprocessors per GPU")
      .at_least(1)
      .at_most(1024)
      .in_unit("SMs");
  t.frequency("gpu.clock", &GpuConfig::clock, "SM clock used for cycle-denominated costs").positive();
  t.bandwidth("gpu.hbm_bandwidth", &GpuConfig::hbm_bandwidth, "Peak HBM bandwidth (datasheet)").positive();

  // Memory: one processor-shared resource for all traffic (kernels, arriving writes, polls).
  t.real("gpu.hbm_efficiency", &GpuConfig::hbm_efficiency,
         "Achievable fraction of peak HBM bandwidth (STREAM-like copy)")
      .positive()
      .at_most(1)
      .in_unit("fraction");

  // Tensor throughput: per SM, per tensor clock; peak = sm_count x flops x clock.
  t.integer("gpu.tensor_flops_per_clock", &GpuConfig::tensor_flops_per_clock, "Dense BF16 tensor FLOPs per SM per clock")
      .at_least(1)
      .at_most(1 << 20)
      .in_unit("FLOP/clk");
  t.frequency("gpu.tensor_clock", &GpuConfig::tensor_clock, "Clock behind the dense tensor rating").positive();
  t.real("gpu.gemm_efficiency", &GpuConfig::gemm_efficiency, "Sustained fraction of tensor peak for a full GEMM tile")
      .positive()
      .at_most(1)
      .in_unit("fraction");
  t.choice("gpu.gemm_model", &GpuConfig::gemm_model, {"datasheet", "calibrated"},
           "GEMM tile speed: datasheet peak x gpu.gemm_efficiency, or measured (gpu.gemm_calibration)");
  t.string("gpu.gemm_calibration", &GpuConfig::gemm_calibration_file,
           "Measured GEMM timings for gpu.gemm_model = calibrated (scripts/calibrate-gpu.sh)");
  const auto tile = [](auto member) { return [member](GpuConfig& g) -> uint32_t& { return g.gemm_tile.*member; }; };
  t.integer("gpu.gemm_tile_m", tile(&GemmTileShape::m), "GEMM thread-block tile rows (BM)").at_least(1).in_unit("elements");
  t.integer("gpu.gemm_tile_n", tile(&GemmTileShape::n), "GEMM thread-block tile columns (BN)").at_least(1).in_unit("elements");
  t.integer("gpu.gemm_tile_k", tile(&GemmTileShape::k), "GEMM K step (BK); K is padded to a multiple of it")
      .at_least(1)
      .in_unit("elements");
  t.integer("gpu.gemm_threads_per_block", &GpuConfig::gemm_threads_per_block, "Threads of one GEMM thread block")
      .at_least(1)
      .in_unit("threads");
  t.integer("gpu.gemm_blocks_per_sm", &GpuConfig::gemm_blocks_per_sm,
            "Resident GEMM thread blocks per SM (shared-memory pipeline fills the SM)")
      .at_least(1)
      .in_unit("blocks");

  add_sm_and_latency_params(t);
  return t;
}

ParamTable<HostConfig> host_table() {
  ParamTable<HostConfig> t;
  t.time("host.issue_cost", &HostConfig::issue_cost, "CPU time to issue one stream command (kernel launch, event, copy)");
  t.time("host.sync_wakeup", &HostConfig::sync_wakeup,
         "Host wake-up after the stream it waits on drains (cudaStreamSynchronize)");
  t.time("host.d2h_latency", &HostConfig::d2h_latency, "Fixed latency of a small device-to-host copy");
  t.bandwidth("host.d2h_bandwidth", &HostConfig::d2h_bandwidth, "Device-to-host copy bandwidth (PCIe, one direction)")
      .positive();
  t.time("host.framework_op_cost", &HostConfig::framework_op_cost,
         "Host time of one eager framework op (Python, the PyTorch dispatcher, autograd bookkeeping) beyond its raw "
         "kernel launch (host.issue_cost)")
      .at_least(0);
  t.time("host.nccl_call_cost", &HostConfig::nccl_call_cost,
         "Host time of one NCCL group call from the framework (torch.distributed or ncclGroupStart..End) beyond "
         "its kernel launch")
      .at_least(0);
  t.time("host.alloc_cost", &HostConfig::alloc_cost,
         "Host time of one CUDA tensor allocation through PyTorch's caching allocator from C++ (at::empty / "
         "torch::empty, a cached block) and its release; no kernel")
      .at_least(0);
  t.time("host.autograd_function_cost", &HostConfig::autograd_function_cost,
         "Host time of one torch.autograd.Function.apply from Python beyond the torch calls its forward makes")
      .at_least(0);
  t.time("host.layer_lead", &HostConfig::layer_lead,
         "Host time the program is already ahead of the GPU when the layer starts (the steady-state lead of a loop "
         "of layers): host work up to this much takes no simulated time, until the host first blocks on a sync")
      .at_least(0);
  return t;
}

// A relative gpu.gemm_calibration written in a TOML file names a file beside that file (the
// presets ship "../calibration/xla-sm90.toml"), so any working directory finds it; from --set
// or a flag it is relative to the working directory.
std::string calibration_path(const Config& c, const std::string& file) {
  const std::filesystem::path path(file);
  if (file.empty() || path.is_absolute()) return file;
  const std::string origin = c.origin("gpu.gemm_calibration");  // "file:line" for file values
  const std::size_t colon = origin.rfind(':');
  if (colon == std::string::npos) return file;
  const std::filesystem::path from(origin.substr(0, colon));
  if (!std::filesystem::is_regular_file(from)) return file;
  return (from.parent_path() / path).lexically_normal().string();
}

}  // namespace

GpuConfig GpuConfig::from(const Config& c) {
  GpuConfig g;
  gpu_table().read(c, g);
  if (g.gemm_model == "calibrated") {
    const std::string file = calibration_path(c, g.gemm_calibration_file);
    if (file.empty()) throw UserError("gpu.gemm_calibration", "must name a file when gpu.gemm_model = \"calibrated\"");
    if (!std::filesystem::is_regular_file(file)) throw UserError("gpu.gemm_calibration", fmt::format("no such file '{}'", file));
    g.gemm_calibration = std::make_shared<const GemmCalibration>(GemmCalibration::load(file));
  }
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
  host_table().read(c, h);
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
  require(alloc_cost >= Time::zero(), "host.alloc_cost", "must not be negative");
  require(autograd_function_cost >= Time::zero(), "host.autograd_function_cost", "must not be negative");
  require(layer_lead >= Time::zero(), "host.layer_lead", "must not be negative");
}

}  // namespace moehub::gpu

namespace moehub {

void declare_gpu_params(ParamRegistry& r) { gpu::gpu_table().declare(r); }
void declare_host_params(ParamRegistry& r) { gpu::host_table().declare(r); }

}  // namespace moehub
