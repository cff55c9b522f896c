#pragma once
// Credits of one link toward the buffer at its far end, per traffic class. A credit returned by
// the far end becomes usable one link latency later; returns are queued with their arrival time
// and absorbed when the sender next looks, so a credit costs no event of its own.

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
  // Returns are pushed in nondecreasing time order (one constant latency per link).
  void give_at(Time at, int tc, uint32_t flits) {
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = Return{at.ps(), flits, static_cast<uint8_t>(tc)};
    ++size_;
  }
  // Time of the earliest pending return, or Time::max().
  Time next_return() const { return size_ ? Time::from_ps(ring_[head_].at) : Time::max(); }

 private:
  struct Return {
    int64_t at;
    uint32_t flits;
    uint8_t tc;
  };
  void absorb(Time now) {
    while (size_ && ring_[head_].at <= now.ps()) {
      avail_[ring_[head_].tc] += ring_[head_].flits;
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }
  }
  void grow() {
    std::vector<Return> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }

  uint32_t avail_[2] = {0, 0};
  uint32_t capacity_[2] = {0, 0};
  std::vector<Return> ring_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace moehub
