#pragma once
// Credits of one link toward the buffer at its far end, per traffic class. A credit returned by
// the far end becomes usable one link latency later; returns are queued with their arrival time
// and absorbed when the sender next looks, so a credit costs no event of its own.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/error.h"
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
  // The time by which `flits` of class tc are available, counting the pending returns
  // (Time::max() if they never suffice). For a sender that lacks credits now.
  Time time_available(int tc, uint32_t flits) const {
    if (avail_[tc] >= flits) return Time::zero();
    const int64_t t = returns_[tc].time_covering(flits - avail_[tc]);
    return t == INT64_MAX ? Time::max() : Time::from_ps(t);
  }
  // Every credit is back or on its way (end-of-run conservation check).
  bool all_returned() const {
    return time_available(0, capacity_[0]) != Time::max() && time_available(1, capacity_[1]) != Time::max();
  }
  // Time of the earliest pending return, or Time::max().
  Time next_return() const {
    const int64_t t = returns_[0].front_at() < returns_[1].front_at() ? returns_[0].front_at() : returns_[1].front_at();
    return t == INT64_MAX ? Time::max() : Time::from_ps(t);
  }

 private:
  // Returns in time order in a ring (its capacity a power of two, grown when full). Out-of-order
  // pushes are frequent (40 % in the default run): every switch output grants up to a link
  // latency ahead, and the outputs of one plane return credits to the same uplink from their own
  // windows; they land by moving the later entries (about 17) one place back. A return packs its
  // time and flits in 8 bytes: with ~10^4 packets in flight the rings are a good part of what
  // the simulation keeps in cache (a vector consumed from the front and compacted now and then
  // swept through twice the memory and missed the cache on every sweep).
  class Returns {
   public:
    void push(int64_t at, uint32_t flits) {
      if (at < 0 || at >= kMaxTime) {
        throw UserError("net.fidelity", "packet-level runs are limited to 2^47 ps (140 s) of simulated time; use \"flow\"");
      }
      if (flits > kFlitMask) throw std::logic_error("DelayedCredits: a return of more than 65535 flits");
      if (size_ == ring_.size()) grow();
      const uint64_t entry = static_cast<uint64_t>(at) << kFlitBits | flits;
      const size_t mask = ring_.size() - 1;
      size_t i = size_;
      // After every return due at or before `at`: equal times keep their push order.
      for (; i > 0; --i) {
        const uint64_t before = ring_[(head_ + i - 1) & mask];
        if (time_of(before) <= at) break;
        ring_[(head_ + i) & mask] = before;
      }
      ring_[(head_ + i) & mask] = entry;
      ++size_;
      if (i == 0) front_at_ = at;
    }
    int64_t front_at() const { return front_at_; }
    // The time of the return that brings the pending flits to `need`, or INT64_MAX.
    int64_t time_covering(uint32_t need) const {
      const size_t mask = ring_.size() - 1;
      uint32_t flits = 0;
      for (size_t i = 0; i < size_; ++i) {
        const uint64_t entry = ring_[(head_ + i) & mask];
        flits += static_cast<uint32_t>(entry & kFlitMask);
        if (flits >= need) return time_of(entry);
      }
      return INT64_MAX;
    }
    // Removes the returns due by `now`; returns their flits.
    uint32_t take_due(int64_t now) {
      if (front_at_ > now) return 0;  // the common look: nothing due, and the ring stays untouched
      uint32_t flits = 0;
      const size_t mask = ring_.size() - 1;
      while (size_ > 0 && time_of(ring_[head_]) <= now) {
        flits += static_cast<uint32_t>(ring_[head_] & kFlitMask);
        head_ = (head_ + 1) & mask;
        --size_;
      }
      if (size_ == 0) head_ = 0;  // an empty ring starts over from its first, warm, entries
      front_at_ = size_ > 0 ? time_of(ring_[head_]) : INT64_MAX;
      // The returns after these were pushed a link latency or more ago and have left the cache;
      // the next look that finds one due comes soon.
      if (size_ > 0) __builtin_prefetch(&ring_[(head_ + 8) & mask]);
      return flits;
    }

   private:
    static constexpr int kFlitBits = 16;
    static constexpr uint64_t kFlitMask = (1ULL << kFlitBits) - 1;
    static constexpr int64_t kMaxTime = INT64_C(1) << 47;
    static int64_t time_of(uint64_t entry) { return static_cast<int64_t>(entry >> kFlitBits); }
    void grow() {
      std::vector<uint64_t> bigger(ring_.empty() ? 64 : ring_.size() * 2);
      for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
      ring_.swap(bigger);
      head_ = 0;
    }
    std::vector<uint64_t> ring_;
    size_t head_ = 0;
    size_t size_ = 0;
    int64_t front_at_ = INT64_MAX;  // time of ring_[head_]: a look at the clock touches no ring
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
