#include "sim/simulator.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

void Simulator::throw_past(Time at) const {
  throw std::logic_error(fmt::format("event scheduled in the past: {} ps < now {} ps", at.ps(), now_.ps()));
}

uint64_t Simulator::run() { return run_until(Time::max()); }

uint64_t Simulator::run_until(Time limit) {
  stopped_ = false;
  uint64_t count = 0;
  Time at;
  uint32_t slot;
  while (!stopped_ && queue_.pop_due(limit, at, slot)) {
    now_ = at;
    queue_.run_and_release(slot);
    ++count;
  }
  executed_ += count;
  // Only a run cut short by the limit ends at it: one that ran dry ends at its last event, so
  // what happened can still be measured over the time it took.
  if (!stopped_ && !queue_.empty() && now_ < limit) now_ = limit;
  return count;
}

}  // namespace moehub
