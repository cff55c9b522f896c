#pragma once
// A memory system shared by every concurrent request: egalitarian processor sharing. While n
// requests are active each is served at capacity / n; a request of b bytes ends once it has
// received b bytes of service. Implemented with virtual time (the service every active request
// has received), so an arrival or a departure costs O(log n), not O(n).
//
// Units: virtual time counts picobytes (1e-12 B). Over dt picoseconds each active request
// receives floor(capacity[B/s] x dt / n) picobytes; the next departure is scheduled with the
// ceiling, so a lone request of b bytes ends exactly at Bandwidth::transfer_time(b).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/bandwidth.h"
#include "sim/callback.h"
#include "sim/simulator.h"
#include "sim/slab.h"

namespace moehub::gpu {

class SharedBandwidth {
 public:
  SharedBandwidth(Simulator& sim, Bandwidth capacity);
  SharedBandwidth(const SharedBandwidth&) = delete;
  SharedBandwidth& operator=(const SharedBandwidth&) = delete;

  // Moves `bytes` through the shared resource; `done` runs when the last byte is served.
  // Zero bytes complete at once (still through an event, never re-entrantly).
  void request(uint64_t bytes, Callback done);
  // The same traffic with nobody waiting for it (a write landing from the network). Its
  // departure changes everyone's share at the same instant as a request's would, but it is
  // accounted when time next advances rather than by an event of its own.
  // `requests`: how many requests these bytes stand for in the statistics (a parked poller's
  // skipped flag loads, charged at once).
  void consume(uint64_t bytes, uint64_t requests = 1);

  // A request that starts unwatched and may be watched later (a flag load: whoever issued it
  // first waits for its latency, and only if its bytes are still in flight then waits for
  // them). It costs no event while unwatched, and the service is the same as request()'s: the
  // ticket keeps the arrival's sequence number for ties among watched departures.
  struct Ticket {
    unsigned __int128 finish = 0;
    uint64_t seq = 0;
  };
  Ticket consume_tracked(uint64_t bytes);
  // Whether the ticket's bytes have been served by now; changes no state (stepping the
  // service at an instant where nothing arrives or departs would round differently).
  bool served_by_now(const Ticket& t) const;
  // Watches a ticket not yet served: `done` runs at its departure, as if request() had been
  // called at its arrival.
  void watch(const Ticket& t, Callback done);

  Bandwidth capacity() const { return capacity_; }
  uint64_t bytes_served() const { return bytes_; }
  Time busy_time() const;  // time with at least one active request, up to now
  nlohmann::json stats() const;

 private:
  using Picobytes = unsigned __int128;
  struct Pending {
    Picobytes finish;  // virtual time at which the request is served
    uint64_t seq;      // arrival order breaks ties deterministically
    uint32_t slot;     // index into callbacks_
    bool after(const Pending& o) const { return finish != o.finish ? finish > o.finish : seq > o.seq; }
  };

  // Virtual time each of n active requests receives over `span`.
  Picobytes served(Time span, size_t n) const;
  // The first unwatched index from i whose finish lies beyond virtual time v.
  size_t first_unserved(size_t i, Picobytes v) const;
  // One step of the service: from updated_ to `to` with n active requests.
  void step_to(Time to, size_t n);
  // The time at which the request with virtual finish `finish` departs if nothing arrives,
  // from time `from`, virtual time `v` and n active requests.
  Time departure(Time from, Picobytes v, Picobytes finish, size_t n) const;
  void advance();  // brings virtual time up to sim.now(), retiring unwatched requests on the way
  void reschedule();
  void on_departure();

  Simulator& sim_;
  Bandwidth capacity_;
  std::vector<Pending> heap_;  // min-heap on (finish, seq)
  // Virtual finish times of consume() requests, ascending; [unwatched_head_, end) are active.
  std::vector<Picobytes> unwatched_;
  size_t unwatched_head_ = 0;
  Slab<Callback> callbacks_;
  Picobytes virtual_ = 0;
  Time updated_ = Time::zero();
  EventHandle next_;
  uint64_t seq_ = 0;
  uint64_t bytes_ = 0;
  uint64_t requests_ = 0;
  Time busy_ = Time::zero();
  std::vector<Callback> ready_;  // scratch: callbacks of departing requests
};

}  // namespace moehub::gpu
