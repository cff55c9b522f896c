#pragma once
// A CUDA-style stream: commands run in order, one at a time. A kernel becomes eligible when
// the command before it has finished (or when it is enqueued, if later) and starts its first
// block gpu.launch_gap after that. Event records fire when reached; an event wait holds the
// stream until the event has fired plus gpu.event_wait_latency. Enqueueing here is the GPU
// side; a Host adds the CPU's issue cost in front (host.h).

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "gpu/block_program.h"
#include "gpu/kernel.h"
#include "sim/callback.h"
#include "sim/time.h"

namespace moehub::gpu {

class Gpu;
class Stream;
using EventId = uint32_t;

struct StreamEvent {
  std::string name;
  std::optional<Time> fired;
  std::vector<Stream*> waiters;
};

class Stream {
 public:
  Stream(Gpu& gpu, std::string name);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& name() const { return name_; }
  Gpu& gpu() { return gpu_; }

  KernelId launch(KernelSpec spec);
  void launch(KernelId kernel);
  void record(EventId event);
  void wait(EventId event);
  // A copy engine transfer (e.g. device to host) that takes `duration` once it starts.
  void copy(std::string label, Time duration, Callback done = nullptr);
  // Runs `fn` when the stream reaches this point (cudaLaunchHostFunc without the host cost).
  void callback(Callback fn);

  // True when nothing is queued or running.
  bool idle() const { return !busy_ && queue_.empty(); }

 private:
  friend class Gpu;
  struct Command {
    enum class Kind : uint8_t { Kernel, Record, Wait, Copy, Callback } kind;
    KernelId kernel = 0;
    EventId event = 0;
    Time duration;
    std::string label;
    Callback done;
  };

  void pump();
  void resume();
  void event_fired(Time ready);
  int track();

  Gpu& gpu_;
  std::string name_;
  std::deque<Command> queue_;
  bool busy_ = false;
  Time waiting_since_;
  EventId waiting_on_ = 0;
  int track_ = -1;
};

}  // namespace moehub::gpu
