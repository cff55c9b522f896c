#include "sim/event_queue.h"

#include <stdexcept>
#include <utility>

namespace moehub {

// A 4-ary heap: half the depth of a binary heap and children share a cache line.
namespace {
constexpr size_t kArity = 4;
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

EventHandle EventQueue::commit(Time at, int32_t priority, uint32_t slot) {
  Slot& s = slot_at(slot);
  if (priority < kMinPriority || priority > kMaxPriority) {
    s.fn.reset();
    free_slots_.push_back(slot);
    throw std::logic_error("event priority out of range");
  }
  s.live = true;
  const uint64_t biased = static_cast<uint64_t>(priority - kMinPriority);
  heap_.push_back(Key{at.ps(), (biased << 48) | next_seq_++, slot});
  sift_up(heap_.size() - 1);
  ++live_;
  return EventHandle{slot, s.generation};
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
  // The heap key stays until it reaches the top; its slot is recycled then.
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
  if (heap_.empty()) throw std::logic_error("EventQueue::next_time on an empty queue");
  return Time::from_ps(heap_.front().time);
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
  drop_cancelled_top();
  if (heap_.empty() || heap_.front().time > limit.ps()) return false;
  const Key top = heap_.front();
  pop_top();
  slot_at(top.slot).live = false;  // no longer cancellable: it is running
  --live_;
  at = Time::from_ps(top.time);
  slot = top.slot;
  return true;
}

void EventQueue::run_and_release(uint32_t slot) {
  Slot& s = slot_at(slot);
  s.fn();
  s.fn.reset();
  free_slot(slot);
}

void EventQueue::pop_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
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

void EventQueue::sift_down(size_t i) {
  const size_t n = heap_.size();
  const Key k = heap_[i];
  for (;;) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t last = first + kArity < n ? first + kArity : n;
    for (size_t c = first + 1; c < last; ++c) {
      if (heap_[c].before(heap_[best])) best = c;
    }
    if (!heap_[best].before(k)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = k;
}

}  // namespace moehub
