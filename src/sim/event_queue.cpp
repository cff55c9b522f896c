#include "sim/event_queue.h"

#include <stdexcept>
#include <utility>

namespace moehub {

EventHandle EventQueue::push(Time at, int32_t priority, Callback fn) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.live = true;
  if (priority < kMinPriority || priority > kMaxPriority) throw std::logic_error("event priority out of range");
  const uint64_t biased = static_cast<uint64_t>(priority - kMinPriority);
  heap_.push_back(Key{at.ps(), (biased << 48) | next_seq_++, slot});
  sift_up(heap_.size() - 1);
  ++live_;
  return EventHandle{slot, s.generation};
}

bool EventQueue::pending(EventHandle h) const {
  return h.valid() && h.slot < slots_.size() && slots_[h.slot].generation == h.generation && slots_[h.slot].live;
}

bool EventQueue::cancel(EventHandle h) {
  if (!pending(h)) return false;
  Slot& s = slots_[h.slot];
  s.live = false;
  s.fn.reset();
  --live_;
  // The heap key stays until it reaches the top; its slot is recycled then.
  return true;
}

void EventQueue::free_slot(uint32_t slot) {
  Slot& s = slots_[slot];
  ++s.generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_top() {
  while (!heap_.empty() && !slots_[heap_.front().slot].live) {
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
  drop_cancelled_top();
  if (heap_.empty()) throw std::logic_error("EventQueue::pop on an empty queue");
  const Key top = heap_.front();
  pop_top();
  Slot& s = slots_[top.slot];
  Callback fn = std::move(s.fn);
  s.live = false;
  free_slot(top.slot);
  --live_;
  at = Time::from_ps(top.time);
  return fn;
}

void EventQueue::pop_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

void EventQueue::sift_up(size_t i) {
  const Key k = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
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
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
    if (!heap_[child].before(k)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = k;
}

}  // namespace moehub
