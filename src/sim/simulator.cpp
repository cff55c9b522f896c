#include "sim/simulator.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

EventHandle Simulator::schedule_at(Time at, Callback fn, int32_t priority) {
  if (at < now_) {
    throw std::logic_error(fmt::format("event scheduled in the past: {} ps < now {} ps", at.ps(), now_.ps()));
  }
  return queue_.push(at, priority, std::move(fn));
}

uint64_t Simulator::run() { return run_until(Time::max()); }

uint64_t Simulator::run_until(Time limit) {
  stopped_ = false;
  uint64_t count = 0;
  while (!stopped_ && !queue_.empty() && queue_.next_time() <= limit) {
    Time at;
    Callback fn = queue_.pop(at);
    now_ = at;
    fn();
    ++count;
  }
  executed_ += count;
  if (!stopped_ && limit != Time::max() && now_ < limit) now_ = limit;
  return count;
}

}  // namespace moehub
