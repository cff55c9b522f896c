#pragma once
// The SM-to-fabric staging FIFO (gpu.store_staging_bytes) in which a GPU's remote stores wait
// until the next stage takes them: the fabric's egress for plain stores, the hub's RPM or egress
// for MoE-Hub. A store that does not fit is refused and its thread block waits; the oldest
// refused store is told to retry once it fits, one at a time (waking every waiting block
// whenever bytes drain would cost an event per block per packet), and after each retry the
// next one, so that the FIFO refills to its capacity. An empty FIFO takes a store of any size.

#include <cstdint>
#include <deque>

#include "gpu/store_port.h"
#include "sim/callback.h"
#include "sim/simulator.h"

namespace moehub {

class StoreStaging {
 public:
  struct Staged {
    int dst;
    uint64_t tag;
    uint64_t bytes;
    uint64_t done;  // bytes the next stage has taken
  };

  StoreStaging(Simulator& sim, uint64_t limit_bytes) : sim_(sim), limit_(limit_bytes) {}
  StoreStaging(const StoreStaging&) = delete;
  StoreStaging& operator=(const StoreStaging&) = delete;

  // Queues the store, or refuses it (false) and keeps `retry` for when it fits.
  bool admit(const gpu::StoreRequest& store, Callback retry) {
    if (!fits(store.bytes)) {
      ++refused_;
      retries_.push_back({store.bytes, std::move(retry)});
      return false;
    }
    staged_ += store.bytes;
    queue_.push_back({static_cast<int>(store.dst_gpu), store.tag, store.bytes, 0});
    return true;
  }

  bool empty() const { return queue_.empty(); }
  const Staged& front() const { return queue_.front(); }
  // The next stage took `bytes` more of the front store.
  void took(uint64_t bytes) {
    Staged& s = queue_.front();
    s.done += bytes;
    staged_ -= bytes;
    if (s.done == s.bytes) queue_.pop_front();
  }

  // Call when the FIFO has drained: lets the oldest refused store try again (outside the
  // caller's pump) if it fits now.
  void release() {
    if (retry_pending_ || retries_.empty() || !fits(retries_.front().bytes)) return;
    retry_pending_ = true;
    Callback r = std::move(retries_.front().retry);
    retries_.pop_front();
    sim_.schedule_in(Time::zero(), [this, r = std::move(r)]() mutable {
      retry_pending_ = false;
      r();
      release();
    });
  }

  uint64_t refused() const { return refused_; }

 private:
  struct Refused {
    uint64_t bytes;
    Callback retry;
  };
  bool fits(uint64_t bytes) const { return staged_ == 0 || staged_ + bytes <= limit_; }

  Simulator& sim_;
  uint64_t limit_;
  uint64_t staged_ = 0;
  std::deque<Staged> queue_;
  std::deque<Refused> retries_;
  bool retry_pending_ = false;
  uint64_t refused_ = 0;
};

}  // namespace moehub
