#pragma once
// A hand-built H800-like GPU for tests (the values of configs/hardware/dgx-h800.toml, written
// out so that every expected picosecond below can be derived from this file alone).

#include "gpu/gpu_config.h"
#include "sim/units.h"

namespace moehub::gpu::testing {

inline GpuConfig h800() {
  GpuConfig g;
  g.name = "H800-test";
  g.sm_count = 132;
  g.clock = parse_frequency("1.98GHz");
  g.hbm_bandwidth = parse_bandwidth("3.35TB/s");
  g.hbm_efficiency = 0.87;  // achievable 2.9145e12 B/s
  g.tensor_flops_per_clock = 4096;
  g.tensor_clock = parse_frequency("1.83GHz");
  g.gemm_efficiency = 0.70;  // 4096 x 1.83e9 x 0.7 = 5.246976e12 FLOP/s per SM
  g.gemm_tile = {128, 128, 64};
  g.gemm_threads_per_block = 384;
  g.gemm_blocks_per_sm = 1;
  g.max_blocks_per_sm = 32;
  g.max_threads_per_sm = 2048;
  g.shared_memory_per_sm = 233472;
  g.registers_per_sm = 65536;
  g.sm_store_bytes_per_clock = 32;  // 63.36e9 B/s per SM
  g.launch_gap = Time::from_ns(1500);
  g.event_wait_latency = Time::from_ns(1000);
  g.poll_latency = Time::from_ns(150);
  g.dram_latency = Time::from_ns(421);
  g.poll_sleep = Time::zero();
  g.poll_bytes = 32;
  g.trace_sm_group = 12;
  return g;
}

inline HostConfig host() {
  HostConfig h;
  h.issue_cost = Time::from_us(3);
  h.sync_wakeup = Time::from_us(5);
  h.d2h_latency = Time::from_us(5);
  h.d2h_bandwidth = parse_bandwidth("64GB/s");
  h.framework_op_cost = Time::from_us(5);
  h.nccl_call_cost = Time::from_us(7);
  return h;
}

// One tile of 128 x 128 x 4096 at 5.246976e12 FLOP/s: ceil(134217728e12 / 5.246976e12) ps.
inline constexpr int64_t kTile4096Ps = 25580016;
inline constexpr int64_t kLaunchGapPs = 1500000;

}  // namespace moehub::gpu::testing
