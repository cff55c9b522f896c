#pragma once
// Pending events ordered by (time, priority, insertion sequence): ties resolve the same way
// on every machine. A binary heap of small keys; callbacks live in a slab indexed by the key,
// so cancelling is O(1) and never searches the heap.

#include <cstdint>
#include <memory>
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
  template <typename F>
  EventHandle push(Time at, int32_t priority, F&& fn) {
    const uint32_t slot = acquire_slot();
    slot_at(slot).fn.emplace(std::forward<F>(fn));
    return commit(at, priority, slot);
  }
  // Returns true if the event was pending and is now cancelled.
  bool cancel(EventHandle h);
  bool pending(EventHandle h) const;

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Time of the earliest live event; the queue must not be empty.
  Time next_time();
  // Removes the earliest live event, returning its time and callback.
  Callback pop(Time& at);

  // The event loop's fast path: if the earliest live event is due at or before `limit`,
  // removes it from the heap and returns true with its time and slot. The caller then runs it
  // in place with run_and_release(slot); slots live in fixed chunks, so events scheduled by
  // the running callback never move it.
  bool pop_due(Time limit, Time& at, uint32_t& slot);
  void run_and_release(uint32_t slot);

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

  uint32_t acquire_slot();
  EventHandle commit(Time at, int32_t priority, uint32_t slot);
  void sift_up(size_t i);
  void sift_down(size_t i);
  void pop_top();
  void drop_cancelled_top();
  void free_slot(uint32_t slot);

  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  Slot& slot_at(uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunkSize - 1)]; }
  const Slot& slot_at(uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunkSize - 1)]; }

  std::vector<Key> heap_;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  uint32_t slot_count_ = 0;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace moehub
