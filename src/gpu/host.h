#pragma once
// The CPU thread that drives one GPU. Its calls form a program that runs in order, one call at
// a time: every stream command costs host.issue_cost of CPU time before the GPU sees it, and
// a sync blocks the thread until the stream has drained. Because the host is blocked, the
// kernels after a sync are issued only once it returns: their issue cost and the GPU's launch
// gap are exposed instead of hidden behind running kernels, as on real systems.

#include <cstdint>
#include <deque>
#include <string>

#include "gpu/gpu_config.h"
#include "gpu/kernel.h"
#include "gpu/stream.h"
#include "sim/callback.h"
#include "sim/simulator.h"
#include "sim/trace_recorder.h"

namespace moehub::gpu {

// What one host program issued, counted as a profiler would (a kernel per cudaLaunchKernel, a
// copy per cudaMemcpyAsync, a sync per blocking wait), plus the CPU time it was busy.
struct HostOps {
  uint64_t kernels = 0;
  uint64_t framework_ops = 0;  // eager framework ops (framework_op), with or without a kernel
  uint64_t nccl_calls = 0;
  uint64_t d2h_copies = 0;
  uint64_t h2d_copies = 0;
  uint64_t syncs = 0;          // the host blocked until a stream drained
  uint64_t events = 0;         // cudaEventRecord and cudaStreamWaitEvent
  uint64_t allocations = 0;    // caching-allocator allocations from C++ (not in the report)
  uint64_t autograd_functions = 0;  // torch.autograd.Function.apply calls (not in the report)
  Time busy;
};

class Host {
 public:
  // `pid` is the timeline process the host's track belongs to (its GPU's index).
  Host(Simulator& sim, HostConfig config, uint32_t pid = 0, TraceRecorder* trace = nullptr);
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // cudaLaunchKernel: the kernel is built now (its id is known at once) and enqueued on the
  // stream after the issue cost.
  KernelId launch(Stream& stream, KernelSpec spec);
  // Another grid of a kernel already launched and counted: one fused kernel modelled as grids
  // on disjoint SM ranges (Comet). Issued like a launch, not counted as one.
  KernelId launch_grid(Stream& stream, KernelSpec spec);
  void record(Stream& stream, EventId event);  // cudaEventRecord
  void wait(Stream& stream, EventId event);    // cudaStreamWaitEvent
  // cudaMemcpyAsync(device to host, `bytes`) + cudaStreamSynchronize + CPU work: issues the
  // copy, blocks until the stream has drained and the copy landed, wakes up
  // (host.sync_wakeup), works for `host_work`, then runs `then` (which may append calls, e.g.
  // launches sized from the copied counts).
  void sync(Stream& stream, uint64_t bytes, Time host_work = Time::zero(), Callback then = nullptr);
  // A blocking host-to-device copy (PyTorch's `.cuda()` of a pageable CPU tensor:
  // cudaMemcpyAsync + cudaStreamSynchronize): the same wait as `sync`, the copy goes the other way.
  void h2d_sync(Stream& stream, uint64_t bytes, Callback then = nullptr);
  // cudaMemcpyAsync of `bytes` on `stream` (issue cost on the host, then the copy on the stream
  // at host.d2h_latency + bytes at host.d2h_bandwidth, in either direction).
  void copy(Stream& stream, std::string label, uint64_t bytes, bool to_host);
  // CPU work of the host program, then `then`.
  void work(Time duration, Callback then = nullptr);
  // One eager framework op's host cost beyond its launch (host.framework_op_cost); the op's
  // kernel, if it has one, is launched after it.
  void framework_op(Callback then = nullptr);
  // The host cost of one NCCL group call beyond its kernel launch (host.nccl_call_cost).
  void nccl_call(Callback then = nullptr);
  // `count` CUDA tensor allocations through the caching allocator from C++ (torch::empty in an
  // extension): host.alloc_cost each, no kernel.
  void allocate(uint32_t count, Callback then = nullptr);
  // One torch.autograd.Function.apply beyond the torch calls its forward makes
  // (host.autograd_function_cost).
  void autograd_function(Callback then = nullptr);
  // Runs `fn` at this point of the host program, taking no time.
  void call(Callback fn);

  bool idle() const { return !busy_ && ops_.empty(); }
  Time busy_time() const { return busy_time_; }
  HostOps ops() const {
    HostOps o = ops_count_;
    o.busy = busy_time_;
    return o;
  }

 private:
  struct Op {
    enum class Kind : uint8_t { Launch, Record, Wait, Sync, Work, Call } kind;
    Stream* stream = nullptr;
    KernelId kernel = 0;
    EventId event = 0;
    uint64_t bytes = 0;
    Time duration;
    Callback then;
    bool to_device = false;  // Sync: the copy is host-to-device
  };

  void push(Op op);
  void pump();
  void finish();
  void span(const std::string& name, const char* category, Time start);
  // The simulated time `host_time` of host work takes: what the remaining lead does not cover.
  Time spend(Time host_time);

  Simulator& sim_;
  HostConfig cfg_;
  int pid_;
  TraceRecorder* trace_;
  int track_ = -1;
  std::deque<Op> ops_;
  bool busy_ = false;
  Time busy_time_;
  Time lead_;  // host.layer_lead not yet used; 0 once the host has blocked
  HostOps ops_count_;
};

}  // namespace moehub::gpu
