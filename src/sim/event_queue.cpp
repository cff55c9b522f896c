#include "sim/event_queue.h"

#include <stdexcept>
#include <utility>

namespace moehub {

namespace {
// The overflow heap is 4-ary: half the depth of a binary heap and children share a cache line.
constexpr size_t kArity = 4;
}  // namespace

static_assert(EventQueue::kMinPriority < 0, "priorities are biased into 16 bits");

EventQueue::EventQueue()
    : buckets_(kBuckets),
      cursor_((static_cast<uint64_t>(0) ^ kTimeBias) >> kBucketBits) {
  static_assert(kBuckets % 4096 == 0 && kBuckets <= 64 * 64 * 64, "the bucket bitmap has three levels of 64 bits");
}

uint32_t EventQueue::grow_slots() {
  const auto slot = static_cast<uint32_t>(nodes_.size());
  if ((slot & (kChunkSize - 1)) == 0) chunks_.push_back(std::make_unique<Callback[]>(kChunkSize));
  nodes_.emplace_back();
  return slot;
}

// Keeps the bucket sorted by key. Appending is the common case (later events are mostly
// scheduled later); an insertion that would walk far goes to the heap, which keeps bursts of
// out-of-order events at one time from costing quadratic time.
inline bool EventQueue::bucket_insert(uint32_t bucket, uint32_t slot) {
  Node& s = nodes_[slot];
  Bucket& b = buckets_[bucket];
  const uint32_t tail = b.tail;
  if (tail == kNone) {
    s.next = kNone;
    b.head = b.tail = slot;
    bucket_words_[bucket >> 6] |= 1ULL << (bucket & 63);
    bucket_mid_[bucket >> 12] |= 1ULL << ((bucket >> 6) & 63);
    bucket_summary_ |= 1ULL << (bucket >> 12);
    return true;
  }
  Node& t = nodes_[tail];
  if (!key_before(s.time, s.order, t.time, t.order)) {
    s.next = kNone;
    t.next = slot;
    b.tail = slot;
    return true;
  }
  uint32_t* link = &b.head;
  for (uint32_t steps = 0;; ++steps) {
    const Node& n = nodes_[*link];
    if (key_before(s.time, s.order, n.time, n.order)) break;  // stops before the tail at the latest
    if (steps == kMaxWalk) return false;
    link = &nodes_[*link].next;
  }
  s.next = *link;
  *link = slot;
  return true;
}

EventHandle EventQueue::commit(Time at, int32_t priority, uint32_t slot) {
  Node& s = nodes_[slot];
  if (priority < kMinPriority || priority > kMaxPriority) {
    callback_at(slot).reset();
    free_slot(slot);
    throw std::logic_error("event priority out of range");
  }
  s.state |= 1U;
  const uint64_t biased = static_cast<uint64_t>(priority - kMinPriority);
  s.time = static_cast<uint64_t>(at.ps()) ^ kTimeBias;
  s.order = (biased << 48) | next_seq_++;
  ++live_;
  // Unsigned: an event before the cursor (possible only when the queue is used without a
  // clock) wraps around to a huge distance and goes to the heap.
  const uint64_t distance = (s.time >> kBucketBits) - cursor_;
  if (distance >= kBuckets || !bucket_insert(static_cast<uint32_t>((s.time >> kBucketBits) & (kBuckets - 1)), slot)) {
    s.next = kInHeap;
    heap_.push_back(Key{s.time, s.order, slot});
    sift_up(heap_.size() - 1);
  }
  return EventHandle{slot, s.state >> 1};
}

// First non-empty bucket at or after position p (no wrap-around), or kNone.
inline uint32_t EventQueue::find_bucket_from(uint32_t p) const {
  const uint32_t w = p >> 6;
  const uint64_t bits = bucket_words_[w] & (~0ULL << (p & 63));
  if (bits) return (w << 6) | static_cast<uint32_t>(__builtin_ctzll(bits));
  const uint32_t m = w >> 6;
  const uint64_t mids = (w & 63) == 63 ? 0 : bucket_mid_[m] & (~0ULL << ((w & 63) + 1));
  if (mids) {
    const uint32_t w2 = (m << 6) | static_cast<uint32_t>(__builtin_ctzll(mids));
    return (w2 << 6) | static_cast<uint32_t>(__builtin_ctzll(bucket_words_[w2]));
  }
  const uint64_t tops = m == 63 ? 0 : bucket_summary_ & (~0ULL << (m + 1));
  if (tops) {
    const uint32_t m2 = static_cast<uint32_t>(__builtin_ctzll(tops));
    const uint32_t w2 = (m2 << 6) | static_cast<uint32_t>(__builtin_ctzll(bucket_mid_[m2]));
    return (w2 << 6) | static_cast<uint32_t>(__builtin_ctzll(bucket_words_[w2]));
  }
  return kNone;
}

inline uint32_t EventQueue::first_bucket() const {
  if (bucket_summary_ == 0) return kNone;
  const uint32_t b = find_bucket_from(static_cast<uint32_t>(cursor_ & (kBuckets - 1)));
  // Nothing from the cursor on: the earliest entry wrapped around (it is later in time).
  return b != kNone ? b : find_bucket_from(0);
}

inline void EventQueue::bucket_pop(uint32_t bucket) {
  Bucket& b = buckets_[bucket];
  const uint32_t next = nodes_[b.head].next;
  b.head = next;
  if (next == kNone) {
    b.tail = kNone;
    uint64_t& word = bucket_words_[bucket >> 6];
    word &= ~(1ULL << (bucket & 63));
    if (word == 0) {
      uint64_t& mid = bucket_mid_[bucket >> 12];
      mid &= ~(1ULL << ((bucket >> 6) & 63));
      if (mid == 0) bucket_summary_ &= ~(1ULL << (bucket >> 12));
    }
  }
}

inline uint32_t EventQueue::calendar_front() {
  for (;;) {
    const uint32_t bucket = first_bucket();
    if (bucket == kNone) return kNone;
    const uint32_t head = buckets_[bucket].head;
    if (nodes_[head].live()) return head;
    bucket_pop(bucket);  // cancelled: its slot is recycled now
    free_slot(head);
  }
}

inline uint32_t EventQueue::take_front(uint64_t limit_biased) {
  if (!heap_.empty() && !nodes_[heap_.front().slot].live()) drop_cancelled_top();
  const uint32_t c = calendar_front();
  bool from_heap;
  if (c == kNone) {
    if (heap_.empty()) return kNone;
    from_heap = true;
  } else {
    const Node& s = nodes_[c];
    from_heap = !heap_.empty() && key_before(heap_.front().time, heap_.front().order, s.time, s.order);
  }
  uint32_t slot;
  uint64_t time;
  if (from_heap) {
    time = heap_.front().time;
    if (time > limit_biased) return kNone;
    slot = heap_.front().slot;
    pop_top();
  } else {
    slot = c;
    time = nodes_[c].time;
    if (time > limit_biased) return kNone;
    const auto bucket = static_cast<uint32_t>((time >> kBucketBits) & (kBuckets - 1));
    bucket_pop(bucket);
    // The event behind this one in its bucket is likely the next to run: fetch its node and
    // callback while this one runs.
    if (const uint32_t next = buckets_[bucket].head; next != kNone) {
      __builtin_prefetch(&nodes_[next]);
      __builtin_prefetch(&callback_at(next));
    }
  }
  // Every remaining event is at or after this one, so the window may move up to it.
  const uint64_t abs = time >> kBucketBits;
  if (abs > cursor_) cursor_ = abs;
  return slot;
}

bool EventQueue::pending(EventHandle h) const {
  if (!h.valid() || h.slot >= nodes_.size()) return false;
  const Node& s = nodes_[h.slot];
  return s.state == ((h.generation << 1) | 1U);
}

bool EventQueue::cancel(EventHandle h) {
  if (!pending(h)) return false;
  Node& n = nodes_[h.slot];
  n.state &= ~1U;
  callback_at(h.slot).reset();
  --live_;
  if (n.next == kInHeap) return true;  // the heap key stays until it reaches the top; its slot is recycled then
  // A calendar entry near the head of its bucket leaves the list now and its slot is reused at
  // once: left in place, cancelled HBM departures held thousands of slots, most of the event
  // queue's memory. Deeper in a long bucket it stays until it reaches the front, as heap keys do.
  const auto bucket = static_cast<uint32_t>((n.time >> kBucketBits) & (kBuckets - 1));
  Bucket& b = buckets_[bucket];
  uint32_t prev = kNone;
  uint32_t steps = 0;
  for (uint32_t i = b.head; i != h.slot; i = nodes_[i].next) {
    if (++steps > kMaxWalk) return true;
    prev = i;
  }
  if (prev == kNone) {
    bucket_pop(bucket);
  } else {
    nodes_[prev].next = n.next;
    if (b.tail == h.slot) b.tail = prev;
  }
  free_slot(h.slot);
  return true;
}

void EventQueue::drop_cancelled_top() {
  while (!heap_.empty() && !nodes_[heap_.front().slot].live()) {
    free_slot(heap_.front().slot);
    pop_top();
  }
}

Time EventQueue::next_time() {
  drop_cancelled_top();
  const uint32_t c = calendar_front();
  if (c == kNone && heap_.empty()) throw std::logic_error("EventQueue::next_time on an empty queue");
  uint64_t t = c == kNone ? heap_.front().time : nodes_[c].time;
  if (c != kNone && !heap_.empty() && heap_.front().time < t) t = heap_.front().time;
  return Time::from_ps(static_cast<int64_t>(t ^ kTimeBias));
}

Callback EventQueue::pop(Time& at) {
  uint32_t slot;
  if (!pop_due(Time::max(), at, slot)) throw std::logic_error("EventQueue::pop on an empty queue");
  Callback fn = std::move(callback_at(slot));
  free_slot(slot);
  return fn;
}

bool EventQueue::pop_due(Time limit, Time& at, uint32_t& slot) {
  const uint32_t s = take_front(static_cast<uint64_t>(limit.ps()) ^ kTimeBias);
  if (s == kNone) return false;
  Node& e = nodes_[s];
  e.state &= ~1U;  // no longer cancellable: it is running
  --live_;
  at = Time::from_ps(static_cast<int64_t>(e.time ^ kTimeBias));
  slot = s;
  return true;
}

void EventQueue::run_and_release(uint32_t slot) {
  // The slot is recycled even if the callback throws (the error ends the run anyway).
  struct Release {
    EventQueue& q;
    uint32_t slot;
    ~Release() { q.free_slot(slot); }
  } release{*this, slot};
  callback_at(slot).consume();
}

// Floyd's bottom-up removal: the hole left by the top sinks along the smallest children to a
// leaf (one comparison fewer per level than sifting the last key down), then the last key,
// which usually belongs near the bottom anyway, sifts up from there.
void EventQueue::pop_top() {
  const Key last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return;
  size_t i = 0;
  for (;;) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    size_t best = first;
    if (first + kArity <= n) {
      const size_t a = heap_[first + 1].before(heap_[first]) ? first + 1 : first;
      const size_t b = heap_[first + 3].before(heap_[first + 2]) ? first + 3 : first + 2;
      best = heap_[b].before(heap_[a]) ? b : a;
    } else {
      for (size_t c = first + 1; c < n; ++c) {
        if (heap_[c].before(heap_[best])) best = c;
      }
    }
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  sift_up(i);
}

void EventQueue::sift_up(size_t i) {
  const Key k = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / kArity;
    if (!k.before(heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = k;
}

}  // namespace moehub
