#include "gpu/stream.h"

#include <fmt/format.h>
#include <stdexcept>

#include "gpu/gpu.h"

namespace moehub::gpu {

Stream::Stream(Gpu& gpu, std::string name) : gpu_(gpu), name_(std::move(name)) {}

int Stream::track() {
  if (track_ < 0) track_ = gpu_.trace_->track(static_cast<int>(gpu_.index_), "stream " + name_);
  return track_;
}

KernelId Stream::launch(KernelSpec spec) {
  const KernelId id = gpu_.create_kernel(std::move(spec));
  launch(id);
  return id;
}

void Stream::launch(KernelId kernel) {
  if (!gpu_.known_kernel(kernel)) throw std::logic_error(fmt::format("unknown kernel id {}", kernel));
  queue_.push_back(Command{Command::Kind::Kernel, kernel, 0, Time::zero(), {}, nullptr});
  pump();
}

void Stream::record(EventId event) {
  if (event >= gpu_.events_.size()) throw std::logic_error("Stream::record: unknown event");
  queue_.push_back(Command{Command::Kind::Record, 0, event, Time::zero(), {}, nullptr});
  pump();
}

void Stream::wait(EventId event) {
  if (event >= gpu_.events_.size()) throw std::logic_error("Stream::wait: unknown event");
  queue_.push_back(Command{Command::Kind::Wait, 0, event, Time::zero(), {}, nullptr});
  pump();
}

void Stream::copy(std::string label, Time duration, Callback done) {
  queue_.push_back(Command{Command::Kind::Copy, 0, 0, duration, std::move(label), std::move(done)});
  pump();
}

void Stream::callback(Callback fn) {
  queue_.push_back(Command{Command::Kind::Callback, 0, 0, Time::zero(), {}, std::move(fn)});
  pump();
}

void Stream::resume() {
  busy_ = false;
  pump();
}

void Stream::event_fired(Time ready) {
  Simulator& sim = gpu_.sim_;
  sim.schedule_at(ready, [this] {
    if (gpu_.trace_) {
      gpu_.trace_->span(static_cast<int>(gpu_.index_), track(), "wait " + gpu_.events_[waiting_on_].name, "sync",
                        waiting_since_, gpu_.sim_.now());
    }
    resume();
  });
}

void Stream::pump() {
  Simulator& sim = gpu_.sim_;
  while (!busy_ && !queue_.empty()) {
    Command c = std::move(queue_.front());
    queue_.pop_front();
    switch (c.kind) {
      case Command::Kind::Kernel: {
        busy_ = true;
        const Time eligible = sim.now();
        const KernelId id = c.kernel;
        sim.schedule_in(gpu_.cfg_.launch_gap, [this, id, eligible] {
          if (gpu_.trace_ && gpu_.sim_.now() > eligible) {
            gpu_.trace_->span(static_cast<int>(gpu_.index_), track(), "launch gap", "launch", eligible, gpu_.sim_.now());
          }
          gpu_.start_kernel(id, [this, id] {
            if (gpu_.trace_) {
              const KernelTimes& t = gpu_.kernel_times(id);
              gpu_.trace_->span(static_cast<int>(gpu_.index_), track(), t.name, "kernel", *t.started, *t.ended,
                                {{"blocks", std::to_string(t.blocks)}});
            }
            resume();
          });
        });
        break;
      }
      case Command::Kind::Record: {
        StreamEvent& e = gpu_.events_[c.event];
        if (e.fired) throw std::logic_error("event '" + e.name + "' recorded twice (events are one-shot)");
        e.fired = sim.now();
        if (gpu_.trace_) gpu_.trace_->instant(static_cast<int>(gpu_.index_), track(), "record " + e.name, "sync", sim.now());
        for (Stream* s : e.waiters) s->event_fired(sim.now() + gpu_.cfg_.event_wait_latency);
        e.waiters.clear();
        break;
      }
      case Command::Kind::Wait: {
        StreamEvent& e = gpu_.events_[c.event];
        busy_ = true;
        waiting_since_ = sim.now();
        waiting_on_ = c.event;
        if (e.fired) {
          event_fired(max(sim.now(), *e.fired + gpu_.cfg_.event_wait_latency));
        } else {
          e.waiters.push_back(this);
        }
        break;
      }
      case Command::Kind::Copy: {
        busy_ = true;
        const Time start = sim.now();
        sim.schedule_in(c.duration, [this, start, label = std::move(c.label), done = std::move(c.done)]() mutable {
          if (gpu_.trace_) gpu_.trace_->span(static_cast<int>(gpu_.index_), track(), label, "copy", start, gpu_.sim_.now());
          if (done) done();
          resume();
        });
        break;
      }
      case Command::Kind::Callback:
        if (c.done) c.done();
        break;
    }
  }
}

}  // namespace moehub::gpu
