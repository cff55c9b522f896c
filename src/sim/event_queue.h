#pragma once
// Pending events ordered by (time, priority, insertion sequence): ties resolve the same way
// on every machine. A binary heap of small keys; callbacks live in a slab indexed by the key,
// so cancelling is O(1) and never searches the heap.

#include <cstdint>
#include <vector>

#include "sim/callback.h"
#include "sim/time.h"

namespace moehub {

// Identifies a scheduled event; stale handles (fired or cancelled) are harmless.
struct EventHandle {
  uint32_t slot = UINT32_MAX;
  uint32_t generation = 0;
  bool valid() const { return slot != UINT32_MAX; }
};

class EventQueue {
 public:
  static constexpr int32_t kMinPriority = -32768;
  static constexpr int32_t kMaxPriority = 32767;
  // Lower priority values run first among events at the same time.
  EventHandle push(Time at, int32_t priority, Callback fn);
  // Returns true if the event was pending and is now cancelled.
  bool cancel(EventHandle h);
  bool pending(EventHandle h) const;

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Time of the earliest live event; the queue must not be empty.
  Time next_time();
  // Removes the earliest live event, returning its time and callback.
  Callback pop(Time& at);

 private:
  struct Key {
    int64_t time;
    uint64_t order;  // biased priority in the top 16 bits, insertion sequence below
    uint32_t slot;
    bool before(const Key& o) const { return time != o.time ? time < o.time : order < o.order; }
  };
  struct Slot {
    Callback fn;
    uint32_t generation = 0;
    bool live = false;
  };

  void sift_up(size_t i);
  void sift_down(size_t i);
  void pop_top();
  void drop_cancelled_top();
  void free_slot(uint32_t slot);

  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace moehub
