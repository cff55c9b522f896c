#pragma once
// The statistics of the hub's units as typed counters, each declared once with its unit (the
// report's `results[].hub`; docs/hub/units.md says what each shows).

#include <cstdint>

#include "sim/counters.h"

namespace moehub {

// Payload over the capacity of `packets` packets of `entry_bytes` each (0 if none).
inline double packet_fill(uint64_t payload_bytes, uint64_t packets, uint32_t entry_bytes) {
  return packets ? static_cast<double>(payload_bytes) / (static_cast<double>(packets) * entry_bytes) : 0.0;
}

struct AauCounters {
  uint64_t rat_hits = 0;
  uint64_t rat_misses = 0;
  uint64_t rat_evictions = 0;
  uint64_t rat_restores = 0;
  uint64_t rat_spill_checks = 0;
  uint64_t rat_pending_joins = 0;
  uint64_t rat_bank_conflict_cycles = 0;
  uint64_t rows_allocated = 0;
  uint64_t region_overflow_writes = 0;
  uint64_t spill_write_bytes = 0;
  uint64_t spill_read_bytes = 0;
  static const CounterTable<AauCounters>& table();
};

// The RPM's buffer (stores, merges, refusals) and its packet scheduler (what left it).
struct RpmCounters {
  uint64_t packets = 0;
  uint64_t payload_bytes = 0;
  uint64_t full_packets = 0;
  uint64_t timer_bypasses = 0;
  uint64_t flushed_packets = 0;
  uint64_t port_refusals = 0;
  uint64_t stores = 0;
  uint64_t merges = 0;
  uint64_t store_refusals = 0;
  static const CounterTable<RpmCounters>& table();
  double mean_packet_fill(uint32_t entry_bytes) const { return packet_fill(payload_bytes, packets, entry_bytes); }
};

struct DamCounters {
  uint64_t acks = 0;
  uint64_t releases = 0;
  uint64_t partial_releases = 0;
  uint64_t retired_groups = 0;
  uint64_t counted_bytes = 0;
  uint64_t unmatched_ack_bytes = 0;
  uint64_t acks_after_all_ready = 0;
  static const CounterTable<DamCounters>& table();
};

}  // namespace moehub
