#pragma once
// Packet Scheduler (paper IV-B2): the RPM's back end. Polls the peer partitions round-robin
// (congestion-aware: one burst toward a single GPU cannot monopolise the egress), takes each
// partition's candidate (RemoteWriteBufferPool::candidate: timer bypass, then full entries by
// priority class and smallest RowID) and offers it to the network port. A refused partition is
// skipped until the port says it may send again, so a congested peer does not block the others.
// At most one packet leaves per `issue_cycles` hub cycles.

#include <cstdint>
#include <functional>
#include <vector>

#include "hub/hub_clock.h"
#include "hub/hub_counters.h"
#include "hub/hub_packet.h"
#include "hub/remote_write_buffer_pool.h"
#include "sim/simulator.h"

namespace moehub {

class PacketScheduler {
 public:
  PacketScheduler(Simulator& sim, RemoteWriteBufferPool& pool, PacketPort& port);

  // Something changed (a store arrived, a flush): look for work at the next issue slot.
  void wake();
  // Called (once each) when an entry of `peer` leaves the buffer.
  void on_entry_freed(std::function<void(uint32_t peer)> hook) { freed_hook_ = std::move(hook); }

  uint64_t packets() const { return n_.packets; }
  uint64_t timer_bypasses() const { return n_.timer_bypasses; }
  // Packets and payload sent, full / timer-bypass / flushed packets, port refusals.
  const RpmCounters& counters() const { return n_; }

 private:
  void pump();
  void arm_timer();

  Simulator& sim_;
  RemoteWriteBufferPool& pool_;
  PacketPort& port_;
  HubClock clock_;
  std::vector<bool> blocked_;
  uint32_t next_partition_ = 0;
  Time next_issue_ = Time::zero();
  EventHandle pump_event_;
  EventHandle timer_event_;
  Time timer_at_ = Time::max();
  // After a send that left the port too full for a whole entry, with only whole entries
  // buffered: the next pump could only be refused, so none runs until the port calls back or
  // a non-whole entry appears (a partly filled store, a flush).
  bool waiting_for_port_ = false;
  std::function<void(uint32_t)> freed_hook_;

  RpmCounters n_;  // the scheduler's part: what left the buffer and how
};

}  // namespace moehub
