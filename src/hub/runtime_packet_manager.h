#pragma once
// Runtime Packet Manager (paper IV-B): the buffer pool and its scheduler at the hub's egress.
// The SM side stores into it (try_store / notify_when_space: the store-port contract, refuse
// and call back); the network side is a PacketPort.

#include <cstdint>
#include <vector>

#include "hub/hub_config.h"
#include "hub/hub_packet.h"
#include "hub/packet_scheduler.h"
#include "hub/remote_write_buffer_pool.h"
#include "sim/simulator.h"

namespace moehub {

class RuntimePacketManager {
 public:
  // `peers`: destination GPUs this hub sends to, numbered 0..peers-1 (the caller maps GPU ids).
  RuntimePacketManager(Simulator& sim, const RpmConfig& config, uint32_t peers, PacketPort& port);

  // Accepts the store into `peer`'s partition, or refuses it (partition full) with no change.
  bool try_store(uint32_t peer, const RemoteStore& store);
  // hub.flow_line_runs: a store of `lines` whole lines as one entry (RemoteWriteBufferPool::try_insert_run).
  bool try_store_run(uint32_t peer, const RemoteStore& store, uint32_t lines, uint32_t transactions, uint32_t max_lines);
  // After a refusal: `ready` runs once, when an entry of `peer`'s partition has been freed
  // (called from inside the scheduler, at that instant; it may store again).
  void notify_when_space(uint32_t peer, Callback ready);
  // A fence or kernel end: every entry buffered now may leave even if partly merged.
  void flush();
  // `done` runs once the buffer is empty (immediately, as an event, if it already is).
  void notify_when_drained(Callback done);

  size_t buffered() const { return pool_.buffered(); }
  const RemoteWriteBufferPool& pool() const { return pool_; }
  RpmCounters counters() const;
  // Payload over the capacity of the packets sent (0 if none).
  double mean_packet_fill() const;

 private:
  void entry_freed(uint32_t peer);

  Simulator& sim_;
  RemoteWriteBufferPool pool_;
  PacketScheduler scheduler_;
  std::vector<std::vector<Callback>> space_waiters_;
  std::vector<Callback> waiter_scratch_;
  std::vector<Callback> drain_waiters_;
  uint64_t store_refusals_ = 0;
};

}  // namespace moehub
