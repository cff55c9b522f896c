#pragma once
// Turns many overlapping activities (thread blocks of one kernel on one SM group) into one
// timeline span per busy period, so a trace of a million blocks stays small. Periods that
// touch (one block ends as the next starts) merge into one span.

#include <cstdint>

#include "sim/time.h"

namespace moehub::gpu {

class CoalescedSpan {
 public:
  template <typename Emit>
  void begin(Time now, Emit&& emit) {
    if (count_++ > 0) return;
    if (pending_ && pending_end_ == now) {
      pending_ = false;  // the period continues
      return;
    }
    flush(emit);
    since_ = now;
  }
  void end(Time now) {
    if (--count_ == 0) {
      pending_ = true;
      pending_end_ = now;
    }
  }
  // Emits the last finished period, if any; call when nothing more can begin.
  template <typename Emit>
  void flush(Emit&& emit) {
    if (pending_) emit(since_, pending_end_);
    pending_ = false;
  }
  uint32_t active() const { return count_; }

 private:
  uint32_t count_ = 0;
  bool pending_ = false;
  Time since_;
  Time pending_end_;
};

}  // namespace moehub::gpu
