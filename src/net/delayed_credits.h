#pragma once
// Credits of one link toward the buffer at its far end, per traffic class. A credit returned by
// the far end becomes usable one link latency later; returns are queued with their arrival time
// and absorbed when the sender next looks, so a credit costs no event of its own.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace moehub {

class DelayedCredits {
 public:
  void init(uint32_t request_flits, uint32_t response_flits) {
    avail_[0] = request_flits;
    avail_[1] = response_flits;
    capacity_[0] = request_flits;
    capacity_[1] = response_flits;
  }
  uint32_t available(int tc, Time now) {
    absorb(now);
    return avail_[tc];
  }
  // Flits held downstream (buffer occupancy as the sender sees it), after absorbing returns.
  uint32_t in_use(int tc) const { return capacity_[tc] - avail_[tc]; }
  void take(int tc, uint32_t flits) { avail_[tc] -= flits; }
  // Returns may be pushed out of time order; they are absorbed by time.
  void give_at(Time at, int tc, uint32_t flits) { returns_[tc].push(at.ps(), flits); }
  // Time of the earliest pending return, or Time::max().
  Time next_return() const {
    const int64_t t = returns_[0].front_at() < returns_[1].front_at() ? returns_[0].front_at() : returns_[1].front_at();
    return t == INT64_MAX ? Time::max() : Time::from_ps(t);
  }

 private:
  // A FIFO of (time, flits) returns in a power-of-two ring.
  class Returns {
   public:
    // Kept in time order: usually an append, but a short packet sent after a long one on
    // another output of the same switch can return its credit first.
    void push(int64_t at, uint32_t flits) {
      if (size_ == ring_.size()) grow();
      const size_t mask = ring_.size() - 1;
      size_t i = size_;
      while (i > 0 && ring_[(head_ + i - 1) & mask].at > at) {
        ring_[(head_ + i) & mask] = ring_[(head_ + i - 1) & mask];
        --i;
      }
      ring_[(head_ + i) & mask] = Return{at, flits};
      ++size_;
    }
    int64_t front_at() const { return size_ ? ring_[head_].at : INT64_MAX; }
    // Removes the returns due by `now`; returns their flits.
    uint32_t take_due(int64_t now) {
      uint32_t flits = 0;
      while (size_ && ring_[head_].at <= now) {
        flits += ring_[head_].flits;
        head_ = (head_ + 1) & (ring_.size() - 1);
        --size_;
      }
      return flits;
    }

   private:
    struct Return {
      int64_t at;
      uint32_t flits;
    };
    void grow() {
      std::vector<Return> bigger(ring_.empty() ? 16 : ring_.size() * 2);
      for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
      ring_.swap(bigger);
      head_ = 0;
    }
    std::vector<Return> ring_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  void absorb(Time now) {
    avail_[0] += returns_[0].take_due(now.ps());
    avail_[1] += returns_[1].take_due(now.ps());
  }

  uint32_t avail_[2] = {0, 0};
  uint32_t capacity_[2] = {0, 0};
  Returns returns_[2];
};

}  // namespace moehub
