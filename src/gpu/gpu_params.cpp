#include "gpu/gpu_params.h"

namespace moehub {

void declare_gpu_params(ParamRegistry& r) {
  r.string("gpu.name", "GPU product modelled");
  r.integer("gpu.sm_count", "Streaming multiprocessors per GPU").at_least(1).at_most(1024).in_unit("SMs");
  r.frequency("gpu.clock", "SM clock used for cycle-denominated costs").positive();
  r.bandwidth("gpu.hbm_bandwidth", "Peak HBM bandwidth (datasheet)").positive();

  // Memory: one processor-shared resource for all traffic (kernels, arriving writes, polls).
  r.real("gpu.hbm_efficiency", "Achievable fraction of peak HBM bandwidth (STREAM-like copy)")
      .positive()
      .at_most(1)
      .in_unit("fraction");

  // Tensor throughput: per SM, per tensor clock; peak = sm_count x flops x clock.
  r.integer("gpu.tensor_flops_per_clock", "Dense BF16 tensor FLOPs per SM per clock").at_least(1).in_unit("FLOP/clk");
  r.frequency("gpu.tensor_clock", "Clock behind the dense tensor rating").positive();
  r.real("gpu.gemm_efficiency", "Sustained fraction of tensor peak for a full GEMM tile")
      .positive()
      .at_most(1)
      .in_unit("fraction");
  r.choice("gpu.gemm_model", {"datasheet", "calibrated"},
           "GEMM tile speed: datasheet peak x gpu.gemm_efficiency, or measured (gpu.gemm_calibration)");
  r.string("gpu.gemm_calibration", "Measured GEMM timings for gpu.gemm_model = calibrated (scripts/calibrate-gpu.sh)");
  r.integer("gpu.gemm_tile_m", "GEMM thread-block tile rows (BM)").at_least(1).in_unit("elements");
  r.integer("gpu.gemm_tile_n", "GEMM thread-block tile columns (BN)").at_least(1).in_unit("elements");
  r.integer("gpu.gemm_tile_k", "GEMM K step (BK); K is padded to a multiple of it").at_least(1).in_unit("elements");
  r.integer("gpu.gemm_threads_per_block", "Threads of one GEMM thread block").at_least(1).in_unit("threads");
  r.integer("gpu.gemm_blocks_per_sm", "Resident GEMM thread blocks per SM (shared-memory pipeline fills the SM)")
      .at_least(1)
      .in_unit("blocks");

  // Occupancy limits of one SM.
  r.integer("gpu.max_blocks_per_sm", "Resident thread blocks per SM (hardware limit)").at_least(1).in_unit("blocks");
  r.integer("gpu.max_threads_per_sm", "Resident threads per SM").at_least(1).in_unit("threads");
  r.bytes("gpu.shared_memory_per_sm", "Shared memory per SM available to thread blocks").positive();
  r.integer("gpu.registers_per_sm", "32-bit registers per SM").at_least(1).in_unit("registers");

  // Stores to peers leave an SM at most this fast (bytes per SM clock).
  r.integer("gpu.sm_store_bytes_per_clock", "Load/store bytes one SM can issue per clock").at_least(1).in_unit("B/clk");
  r.bytes("gpu.store_staging_bytes", "Remote-store bytes the SM-to-hub path holds before stores back-pressure the SMs")
      .positive();

  // Launch and stream costs on the GPU side.
  r.time("gpu.launch_gap", "GPU-side latency from a kernel becoming eligible to its first thread block");
  r.time("gpu.event_wait_latency", "Latency of a cross-stream event wait after the event fires");

  // Polling a signal in device memory.
  r.time("gpu.poll_latency", "Latency of one flag load (an L2 round trip)");
  r.time("gpu.poll_sleep", "Sleep between polls (__nanosleep)");
  r.bytes("gpu.poll_bytes", "Memory traffic of one poll").positive();

  r.integer("gpu.trace_sm_group", "SMs per timeline track (presentation only)").at_least(1).in_unit("SMs");
}

void declare_host_params(ParamRegistry& r) {
  r.time("host.issue_cost", "CPU time to issue one stream command (kernel launch, event, copy)");
  r.time("host.sync_wakeup", "Host wake-up after the stream it waits on drains (cudaStreamSynchronize)");
  r.time("host.d2h_latency", "Fixed latency of a small device-to-host copy");
  r.bandwidth("host.d2h_bandwidth", "Device-to-host copy bandwidth (PCIe, one direction)").positive();
  r.time("host.framework_op_cost",
         "Host time of one eager framework op (Python, the PyTorch dispatcher, autograd bookkeeping) beyond its raw "
         "kernel launch (host.issue_cost)")
      .at_least(0);
  r.time("host.nccl_call_cost",
         "Host time of one NCCL group call from the framework (torch.distributed or ncclGroupStart..End) beyond "
         "its kernel launch")
      .at_least(0);
}

}  // namespace moehub
