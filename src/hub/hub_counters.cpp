#include "hub/hub_counters.h"

namespace moehub {

const CounterTable<AauCounters>& AauCounters::table() {
  using S = AauCounters;
  static const CounterTable<S> t{
      {"rat_hits", "lookups", "stores whose RowID the RAT held", &S::rat_hits},
      {"rat_misses", "lookups", "stores whose RowID was new or spilled", &S::rat_misses},
      {"rat_evictions", "mappings", "RAT mappings spilled to device memory", &S::rat_evictions},
      {"rat_restores", "mappings", "spilled mappings read back", &S::rat_restores},
      {"rat_spill_checks", "lookups", "misses that looked in the spill area", &S::rat_spill_checks},
      {"rat_pending_joins", "stores", "stores that joined a miss in flight for their row", &S::rat_pending_joins},
      {"rat_bank_conflict_cycles", "cycles", "hub cycles lookups waited for a busy RAT bank", &S::rat_bank_conflict_cycles},
      {"rows_allocated", "rows", "rows the APT allocated", &S::rows_allocated},
      {"region_overflow_writes", "stores", "stores dropped because their region was full", &S::region_overflow_writes},
      {"spill_write_bytes", "B", "bytes written to the spill area", &S::spill_write_bytes},
      {"spill_read_bytes", "B", "bytes read back from the spill area", &S::spill_read_bytes}};
  return t;
}

const CounterTable<RpmCounters>& RpmCounters::table() {
  using S = RpmCounters;
  static const CounterTable<S> t{
      {"packets", "packets", "packets the scheduler sent", &S::packets},
      {"payload_bytes", "B", "payload bytes in those packets", &S::payload_bytes},
      {"full_packets", "packets", "packets sent with every byte of their entry valid", &S::full_packets},
      {"timer_bypasses", "packets", "partly filled entries sent when their timer expired", &S::timer_bypasses},
      {"flushed_packets", "packets", "partly filled entries sent by a flush", &S::flushed_packets},
      {"port_refusals", "offers", "packets the egress port refused (full)", &S::port_refusals},
      {"stores", "stores", "stores the buffer accepted", &S::stores},
      {"merges", "stores", "stores merged into an entry already holding their line", &S::merges},
      {"store_refusals", "stores", "stores refused because their partition was full", &S::store_refusals}};
  return t;
}

const CounterTable<DamCounters>& DamCounters::table() {
  using S = DamCounters;
  static const CounterTable<S> t{
      {"acks", "acks", "write acknowledgements counted", &S::acks},
      {"releases", "groups", "groups released when their counter reached the threshold", &S::releases},
      {"partial_releases", "groups", "groups released partly ready (AllReady before the threshold)", &S::partial_releases},
      {"retired_groups", "groups", "groups AllReady found with no acknowledged byte (never scheduled)", &S::retired_groups},
      {"counted_bytes", "B", "acknowledged bytes added to the global counter", &S::counted_bytes},
      {"unmatched_ack_bytes", "B", "acknowledged bytes outside every table entry", &S::unmatched_ack_bytes},
      {"acks_after_all_ready", "acks", "acknowledgements that arrived after AllReady", &S::acks_after_all_ready}};
  return t;
}

}  // namespace moehub
