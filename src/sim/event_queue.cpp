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
    : bucket_head_(kBuckets, kNone),
      bucket_tail_(kBuckets, kNone),
      cursor_((static_cast<uint64_t>(0) ^ kTimeBias) >> kBucketBits) {
  static_assert(kBuckets == 64 * 64, "the bucket bitmap has two levels of 64 bits");
}

uint32_t EventQueue::acquire_slot() {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  if ((slot_count_ & (kChunkSize - 1)) == 0) chunks_.push_back(std::make_unique<Slot[]>(kChunkSize));
  return slot_count_++;
}

// Keeps the bucket sorted by key. Appending is the common case (later events are mostly
// scheduled later); an insertion that would walk far goes to the heap, which keeps bursts of
// out-of-order events at one time from costing quadratic time.
inline bool EventQueue::bucket_insert(uint32_t bucket, uint32_t slot) {
  Slot& s = slot_at(slot);
  const uint32_t tail = bucket_tail_[bucket];
  if (tail == kNone) {
    s.next = kNone;
    bucket_head_[bucket] = bucket_tail_[bucket] = slot;
    bucket_words_[bucket >> 6] |= 1ULL << (bucket & 63);
    bucket_summary_ |= 1ULL << (bucket >> 6);
    return true;
  }
  const Slot& t = slot_at(tail);
  if (!key_before(s.time, s.order, t.time, t.order)) {
    s.next = kNone;
    slot_at(tail).next = slot;
    bucket_tail_[bucket] = slot;
    return true;
  }
  uint32_t* link = &bucket_head_[bucket];
  for (uint32_t steps = 0;; ++steps) {
    const Slot& n = slot_at(*link);
    if (key_before(s.time, s.order, n.time, n.order)) break;  // stops before the tail at the latest
    if (steps == kMaxWalk) return false;
    link = &slot_at(*link).next;
  }
  s.next = *link;
  *link = slot;
  return true;
}

EventHandle EventQueue::commit(Time at, int32_t priority, uint32_t slot) {
  Slot& s = slot_at(slot);
  if (priority < kMinPriority || priority > kMaxPriority) {
    s.fn.reset();
    free_slots_.push_back(slot);
    throw std::logic_error("event priority out of range");
  }
  s.live = true;
  const uint64_t biased = static_cast<uint64_t>(priority - kMinPriority);
  s.time = static_cast<uint64_t>(at.ps()) ^ kTimeBias;
  s.order = (biased << 48) | next_seq_++;
  ++live_;
  // Unsigned: an event before the cursor (possible only when the queue is used without a
  // clock) wraps around to a huge distance and goes to the heap.
  const uint64_t distance = (s.time >> kBucketBits) - cursor_;
  if (distance >= kBuckets || !bucket_insert(static_cast<uint32_t>((s.time >> kBucketBits) & (kBuckets - 1)), slot)) {
    heap_.push_back(Key{s.time, s.order, slot});
    sift_up(heap_.size() - 1);
  }
  return EventHandle{slot, s.generation};
}

inline uint32_t EventQueue::first_bucket() const {
  if (bucket_summary_ == 0) return kNone;
  const uint32_t p = static_cast<uint32_t>(cursor_ & (kBuckets - 1));
  const uint32_t w = p >> 6;
  // The cursor's word from the cursor on, then the later words, then (wrapping around: later
  // in time) the earlier words and the cursor word's low bits.
  uint64_t bits = bucket_words_[w] & (~0ULL << (p & 63));
  if (bits) return (w << 6) | static_cast<uint32_t>(__builtin_ctzll(bits));
  const uint64_t later = w == 63 ? 0 : bucket_summary_ & (~0ULL << (w + 1));
  if (later) {
    const uint32_t w2 = static_cast<uint32_t>(__builtin_ctzll(later));
    return (w2 << 6) | static_cast<uint32_t>(__builtin_ctzll(bucket_words_[w2]));
  }
  const uint64_t earlier = bucket_summary_ & ((1ULL << w) - 1);
  if (earlier) {
    const uint32_t w2 = static_cast<uint32_t>(__builtin_ctzll(earlier));
    return (w2 << 6) | static_cast<uint32_t>(__builtin_ctzll(bucket_words_[w2]));
  }
  bits = bucket_words_[w];  // only the low bits remain
  return (w << 6) | static_cast<uint32_t>(__builtin_ctzll(bits));
}

inline void EventQueue::bucket_pop(uint32_t bucket) {
  const uint32_t head = bucket_head_[bucket];
  const uint32_t next = slot_at(head).next;
  bucket_head_[bucket] = next;
  if (next == kNone) {
    bucket_tail_[bucket] = kNone;
    uint64_t& word = bucket_words_[bucket >> 6];
    word &= ~(1ULL << (bucket & 63));
    if (word == 0) bucket_summary_ &= ~(1ULL << (bucket >> 6));
  }
}

inline uint32_t EventQueue::calendar_front() {
  for (;;) {
    const uint32_t bucket = first_bucket();
    if (bucket == kNone) return kNone;
    const uint32_t head = bucket_head_[bucket];
    if (slot_at(head).live) return head;
    bucket_pop(bucket);  // cancelled: its slot is recycled now
    free_slot(head);
  }
}

inline uint32_t EventQueue::take_front(uint64_t limit_biased) {
  drop_cancelled_top();
  const uint32_t c = calendar_front();
  bool from_heap;
  if (c == kNone) {
    if (heap_.empty()) return kNone;
    from_heap = true;
  } else {
    const Slot& s = slot_at(c);
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
    time = slot_at(c).time;
    if (time > limit_biased) return kNone;
    bucket_pop(static_cast<uint32_t>((time >> kBucketBits) & (kBuckets - 1)));
  }
  // Every remaining event is at or after this one, so the window may move up to it.
  const uint64_t abs = time >> kBucketBits;
  if (abs > cursor_) cursor_ = abs;
  return slot;
}

bool EventQueue::pending(EventHandle h) const {
  if (!h.valid() || h.slot >= slot_count_) return false;
  const Slot& s = slot_at(h.slot);
  return s.generation == h.generation && s.live;
}

bool EventQueue::cancel(EventHandle h) {
  if (!pending(h)) return false;
  Slot& s = slot_at(h.slot);
  s.live = false;
  s.fn.reset();
  --live_;
  // The key stays until it reaches the front of its structure; its slot is recycled then.
  return true;
}

void EventQueue::free_slot(uint32_t slot) {
  ++slot_at(slot).generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_top() {
  while (!heap_.empty() && !slot_at(heap_.front().slot).live) {
    free_slot(heap_.front().slot);
    pop_top();
  }
}

Time EventQueue::next_time() {
  drop_cancelled_top();
  const uint32_t c = calendar_front();
  if (c == kNone && heap_.empty()) throw std::logic_error("EventQueue::next_time on an empty queue");
  uint64_t t = c == kNone ? heap_.front().time : slot_at(c).time;
  if (c != kNone && !heap_.empty() && heap_.front().time < t) t = heap_.front().time;
  return Time::from_ps(static_cast<int64_t>(t ^ kTimeBias));
}

Callback EventQueue::pop(Time& at) {
  uint32_t slot;
  if (!pop_due(Time::max(), at, slot)) throw std::logic_error("EventQueue::pop on an empty queue");
  Slot& s = slot_at(slot);
  Callback fn = std::move(s.fn);
  free_slot(slot);
  return fn;
}

bool EventQueue::pop_due(Time limit, Time& at, uint32_t& slot) {
  const uint32_t s = take_front(static_cast<uint64_t>(limit.ps()) ^ kTimeBias);
  if (s == kNone) return false;
  Slot& e = slot_at(s);
  e.live = false;  // no longer cancellable: it is running
  --live_;
  at = Time::from_ps(static_cast<int64_t>(e.time ^ kTimeBias));
  slot = s;
  return true;
}

void EventQueue::run_and_release(uint32_t slot) {
  Slot& s = slot_at(slot);
  s.fn();
  s.fn.reset();
  free_slot(slot);
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
