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

class Host {
 public:
  // `pid` is the timeline process the host's track belongs to (its GPU's index).
  Host(Simulator& sim, HostConfig config, uint32_t pid = 0, TraceRecorder* trace = nullptr);
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // cudaLaunchKernel: the kernel is built now (its id is known at once) and enqueued on the
  // stream after the issue cost.
  KernelId launch(Stream& stream, KernelSpec spec);
  void record(Stream& stream, EventId event);  // cudaEventRecord
  void wait(Stream& stream, EventId event);    // cudaStreamWaitEvent
  // cudaMemcpyAsync(device to host, `bytes`) + cudaStreamSynchronize + CPU work: issues the
  // copy, blocks until the stream has drained and the copy landed, wakes up
  // (host.sync_wakeup), works for `host_work`, then runs `then` (which may append calls, e.g.
  // launches sized from the copied counts).
  void sync(Stream& stream, uint64_t bytes, Time host_work = Time::zero(), Callback then = nullptr);
  // CPU work of the host program, then `then`.
  void work(Time duration, Callback then = nullptr);
  // Runs `fn` at this point of the host program, taking no time.
  void call(Callback fn);

  bool idle() const { return !busy_ && ops_.empty(); }
  Time busy_time() const { return busy_time_; }

 private:
  struct Op {
    enum class Kind : uint8_t { Launch, Record, Wait, Sync, Work, Call } kind;
    Stream* stream = nullptr;
    KernelId kernel = 0;
    EventId event = 0;
    uint64_t bytes = 0;
    Time duration;
    Callback then;
  };

  void push(Op op);
  void pump();
  void finish();
  void span(const std::string& name, const char* category, Time start);

  Simulator& sim_;
  HostConfig cfg_;
  int pid_;
  TraceRecorder* trace_;
  int track_ = -1;
  std::deque<Op> ops_;
  bool busy_ = false;
  Time busy_time_;
};

}  // namespace moehub::gpu
