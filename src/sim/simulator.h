#pragma once
// The event loop. Components hold a reference to their Simulator; there is no global clock.

#include <cstdint>
#include <utility>

#include "sim/callback.h"
#include "sim/event_queue.h"
#include "sim/time.h"

namespace moehub {

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }

  // Scheduling in the past is a programming error (std::logic_error).
  template <typename F>
  EventHandle schedule_at(Time at, F&& fn, int32_t priority = 0) {
    if (at < now_) throw_past(at);
    return queue_.push(at, priority, std::forward<F>(fn));
  }
  template <typename F>
  EventHandle schedule_in(Time delay, F&& fn, int32_t priority = 0) {
    return schedule_at(now_ + delay, std::forward<F>(fn), priority);
  }
  // Typed member-function scheduling, e.g. sim.schedule_in(d, &Link::finish, this).
  template <typename C, typename... A>
  EventHandle schedule_in(Time delay, void (C::*method)(A...), C* obj, std::decay_t<A>... args) {
    return schedule_in(delay, [obj, method, args...]() mutable { (obj->*method)(std::move(args)...); });
  }

  bool cancel(EventHandle h) { return queue_.cancel(h); }
  bool pending(EventHandle h) const { return queue_.pending(h); }

  // Runs until no events remain or stop() is called. Returns the number of events executed.
  uint64_t run();
  // Runs events with time <= limit; the clock ends at `limit` if events remain beyond it,
  // otherwise at the last event run.
  uint64_t run_until(Time limit);
  void stop() { stopped_ = true; }

  uint64_t events_executed() const { return executed_; }
  size_t events_pending() const { return queue_.size(); }

 private:
  [[noreturn]] void throw_past(Time at) const;

  EventQueue queue_;
  Time now_ = Time::zero();
  uint64_t executed_ = 0;
  bool stopped_ = false;
};

}  // namespace moehub
