#pragma once
// Pending events ordered by (time, priority, insertion sequence): ties resolve the same way
// on every machine. Callbacks live in a slab of slots; cancelling is O(1): a calendar entry
// near the head of its bucket is unlinked at once, any other entry is dropped lazily when it
// reaches the front.
//
// Two structures hold the keys. A calendar ("timing wheel", Brown 1988) of kBuckets buckets,
// each 2^kBucketBits ps wide, covers the next ~1 us after the current time; each bucket is a
// short list kept sorted by the full key. Events beyond that window (or that would need a long
// walk to insert in order) go to a 4-ary heap. The earliest event is the smaller of the two
// fronts, so the order is exactly that of a single priority queue; the calendar only makes the
// common case — a dense population of events a few hundred ns ahead, as in the packet
// network — cost a few dozen instructions instead of a heap's log(n) comparisons.

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

  EventQueue();
  // Lower priority values run first among events at the same time.
  template <typename F>
  EventHandle push(Time at, int32_t priority, F&& fn) {
    const uint32_t slot = acquire_slot();
    callback_at(slot).emplace(std::forward<F>(fn));
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
  // removes it from the queue and returns true with its time and slot. The caller then runs it
  // in place with run_and_release(slot); callbacks live in fixed chunks, so events scheduled by
  // the running callback never move it.
  bool pop_due(Time limit, Time& at, uint32_t& slot);
  void run_and_release(uint32_t slot);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr uint32_t kInHeap = UINT32_MAX - 1;  // Node::next of an entry kept in the heap
  // Keys compare as one unsigned 128-bit number: (time with the sign bit flipped, order).
  static constexpr uint64_t kTimeBias = 1ULL << 63;
  static bool key_before(uint64_t t1, uint64_t o1, uint64_t t2, uint64_t o2) {
    return ((static_cast<unsigned __int128>(t1) << 64) | o1) < ((static_cast<unsigned __int128>(t2) << 64) | o2);
  }

  struct Key {  // a heap entry
    uint64_t time;
    uint64_t order;  // biased priority in the top 16 bits, insertion sequence below
    uint32_t slot;
    bool before(const Key& o) const { return key_before(time, order, o.time, o.order); }
  };
  // The ordering state of one slot, apart from its callback: walking a bucket touches only
  // these 24-byte nodes.
  struct Node {
    uint64_t time = 0;  // biased, as in Key
    uint64_t order = 0;
    uint32_t next = kNone;  // next entry of its calendar bucket, or of the free list
    uint32_t state = 0;     // generation << 1 | live
    bool live() const { return (state & 1U) != 0; }
  };

  // 16384 buckets of 64 ps: a 1.05 us window. Narrow buckets keep most insertions at an empty
  // bucket or its tail (events a few ns apart are scheduled in nearly any order); 16 ps buckets
  // walk less still, but their 512 KiB array costs more in cache misses than the walks save
  // when two simulations share a core's caches (docs/performance/event-core.md).
  static constexpr uint32_t kBucketBits = 6;
  static constexpr uint32_t kBuckets = 16384;
  static constexpr uint32_t kMaxWalk = 8;  // longer in-bucket walks go to the heap instead

  uint32_t acquire_slot() {
    if (free_head_ != kNone) {
      const uint32_t slot = free_head_;
      free_head_ = nodes_[slot].next;
      return slot;
    }
    return grow_slots();
  }
  uint32_t grow_slots();
  EventHandle commit(Time at, int32_t priority, uint32_t slot);
  [[gnu::always_inline]] inline bool bucket_insert(uint32_t bucket, uint32_t slot);
  [[gnu::always_inline]] inline uint32_t find_bucket_from(uint32_t p) const;
  [[gnu::always_inline]] inline uint32_t first_bucket() const;  // first non-empty bucket from the cursor, or kNone
  [[gnu::always_inline]] inline uint32_t calendar_front();      // earliest live slot in the calendar (drops cancelled), or kNone
  [[gnu::always_inline]] inline void bucket_pop(uint32_t bucket);
  // Removes the earliest live event (from whichever structure holds it) if it is due by
  // `limit_biased`; returns its slot or kNone.
  [[gnu::always_inline]] inline uint32_t take_front(uint64_t limit_biased);
  void sift_up(size_t i);
  void pop_top();
  void drop_cancelled_top();
  void free_slot(uint32_t slot) {
    Node& n = nodes_[slot];
    n.state = (n.state | 1U) + 1U;  // next generation, not live
    n.next = free_head_;
    free_head_ = slot;
  }

  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  Callback& callback_at(uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunkSize - 1)]; }

  std::vector<Key> heap_;
  std::vector<Node> nodes_;
  struct Bucket {  // head and tail share a cache line
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };
  std::vector<Bucket> buckets_;
  // A three-level bitmap of non-empty buckets: bit b of words_, bit w of mid_ (word w of
  // words_ is not zero), bit m of summary_ (word m of mid_ is not zero).
  uint64_t bucket_words_[kBuckets / 64] = {};
  uint64_t bucket_mid_[kBuckets / 4096] = {};
  uint64_t bucket_summary_ = 0;
  // Absolute bucket number (biased time >> kBucketBits) of the last event taken; every
  // calendar entry lies in [cursor_, cursor_ + kBuckets), so bucket order is time order.
  uint64_t cursor_;
  std::vector<std::unique_ptr<Callback[]>> chunks_;
  uint32_t free_head_ = kNone;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace moehub
