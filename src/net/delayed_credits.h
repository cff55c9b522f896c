#pragma once
// Credits of one link toward the buffer at its far end, per traffic class. A credit returned by
// the far end becomes usable one link latency later; returns are queued with their arrival time
// and absorbed when the sender next looks, so a credit costs no event of its own.

#include <algorithm>
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
  // Returns in time order in a vector whose front part [0, head_) is spent. Out-of-order pushes
  // are frequent (40 % in the default run): every switch output grants up to a link latency
  // ahead, and the outputs of one plane return credits to the same uplink from their own
  // windows; they land by binary search and one move of the later entries (about 17).
  class Returns {
   public:
    void push(int64_t at, uint32_t flits) {
      if (entries_.size() == head_ || entries_.back().at <= at) {
        entries_.push_back(Return{at, flits});
        return;
      }
      const auto pos = std::upper_bound(entries_.begin() + static_cast<std::ptrdiff_t>(head_), entries_.end(), at,
                                        [](int64_t t, const Return& r) { return t < r.at; });
      entries_.insert(pos, Return{at, flits});
    }
    int64_t front_at() const { return entries_.size() > head_ ? entries_[head_].at : INT64_MAX; }
    // Removes the returns due by `now`; returns their flits.
    uint32_t take_due(int64_t now) {
      uint32_t flits = 0;
      const size_t n = entries_.size();
      while (head_ < n && entries_[head_].at <= now) flits += entries_[head_++].flits;
      if (head_ == n) {
        entries_.clear();
        head_ = 0;
      } else if (head_ >= 64 && head_ * 2 >= n) {
        entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
      return flits;
    }

   private:
    struct Return {
      int64_t at;
      uint32_t flits;
    };
    std::vector<Return> entries_;
    size_t head_ = 0;
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
