#pragma once
// Plain configuration structs of the GPU layer, built from a resolved Config (or by hand in
// tests). `validate()` rejects values that would make the model meaningless, naming the key.

#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "gpu/gemm_calibration.h"
#include "sim/bandwidth.h"
#include "sim/frequency.h"
#include "sim/time.h"

namespace moehub::gpu {

struct GemmTileShape {
  uint32_t m = 128;  // BM
  uint32_t n = 128;  // BN
  uint32_t k = 64;   // BK
};

struct GpuConfig {
  std::string name = "gpu";
  uint32_t sm_count = 0;
  Frequency clock;
  Bandwidth hbm_bandwidth;
  double hbm_efficiency = 1.0;

  uint64_t tensor_flops_per_clock = 0;  // per SM
  Frequency tensor_clock;
  double gemm_efficiency = 1.0;
  std::string gemm_model = "datasheet";  // or "calibrated"
  std::string gemm_calibration_file;
  // Set (gpu.gemm_model = "calibrated"): GEMMs take their efficiency from these measurements
  // instead of gemm_efficiency. Shared: every GEMM of the run reads the same table.
  std::shared_ptr<const GemmCalibration> gemm_calibration;
  GemmTileShape gemm_tile;
  uint32_t gemm_threads_per_block = 0;
  uint32_t gemm_blocks_per_sm = 1;

  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_sm = 0;
  uint64_t shared_memory_per_sm = 0;
  uint32_t registers_per_sm = 0;

  uint64_t sm_store_bytes_per_clock = 0;
  uint64_t store_staging_bytes = 0;  // remote-store bytes staged before the SMs back-pressure

  Time launch_gap;
  Time event_wait_latency;

  Time poll_latency;
  Time dram_latency;  // load-to-use of a dependent read that misses L2
  Time poll_sleep;
  uint64_t poll_bytes = 0;
  // Each: every flag load is a load through the memory model. Parked: a poller that saw its
  // flag low waits on the signal and wakes at the poll that would have seen it, the loads in
  // between charged to memory in one write at the wake (a stated reduction, docs/gpu.md).
  enum class PollModel : uint8_t { Each, Parked };
  PollModel poll_model = PollModel::Each;

  uint32_t trace_sm_group = 1;

  static GpuConfig from(const Config& config);
  // Throws UserError("gpu.<key>", reason) for the first bad value.
  void validate() const;

  // Derived rates (integers, rounded to nearest).
  Bandwidth hbm_achievable() const;             // hbm_bandwidth x hbm_efficiency
  uint64_t sm_tensor_peak_flops_per_second() const;  // one SM, datasheet peak
  uint64_t sm_tensor_flops_per_second() const;       // one SM, at gemm_efficiency
  Bandwidth sm_store_bandwidth() const;         // sm_store_bytes_per_clock x clock
};

struct HostConfig {
  Time issue_cost;
  Time sync_wakeup;
  Time d2h_latency;
  Bandwidth d2h_bandwidth;
  Time framework_op_cost;  // an eager framework op beyond its launch
  Time nccl_call_cost;     // an NCCL group call beyond its kernel launch
  Time alloc_cost;         // one caching-allocator allocation from C++ (at::empty), with its release
  Time autograd_function_cost;  // torch.autograd.Function.apply beyond the calls its forward makes
  Time layer_lead;         // host time already spent ahead of the GPU when the layer starts

  static HostConfig from(const Config& config);
  void validate() const;
};

}  // namespace moehub::gpu
