#pragma once
// Data Availability Manager (paper IV-C): at the consumer's hub, write acknowledgements (of st.
// and st.rowsp alike) are looked up in the Dependency Table; each matching TB group's status
// counter grows by the acknowledged bytes, and when it reaches its threshold the DAM signals the
// thread-block dispatcher that the group is ready. A global counter with an expected total
// raises AllReady: groups holding some data but short of their threshold (the partial last
// tile) are released, groups that never received data are retired (never scheduled).
//
// Counters count bytes; a threshold in rows is rows x counted bytes per row. Every signal is
// recorded with its time so the system layer can compare with when polling would notice.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "hub/dependency_table.h"
#include "hub/hub_clock.h"
#include "hub/hub_counters.h"
#include "hub/hub_config.h"
#include "sim/simulator.h"

namespace moehub {

enum class DamSignalKind {
  Ready,         // counter reached its threshold
  PartialReady,  // AllReady released a group with some but not all of its threshold
  Retired        // AllReady found the group's counter at zero: it is never scheduled
};

const char* dam_signal_name(DamSignalKind kind);

struct DamSignal {
  uint32_t group = 0;
  DamSignalKind kind = DamSignalKind::Ready;
  Time at;
  uint64_t counted_bytes = 0;  // the group's counter when signalled
};

class DataAvailabilityManager {
 public:
  using SignalHook = std::function<void(const DamSignal&)>;

  // `signal` reaches the GPU's thread-block dispatcher (hardware-wait mode). It runs inside the
  // DAM's event; it may schedule work but must not reset() the DAM synchronously.
  DataAvailabilityManager(Simulator& sim, const DamConfig& config, SignalHook signal);

  // Programs the table for a consumer kernel (the compiler's tiling); returns tiles added.
  // UserError (hub.dam.table_entries / hub.dam.counter_bits) if it does not fit.
  uint32_t add_tiling(const ConsumerTiling& tiling);
  void add_entry(const DependencyEntry& entry);
  // Acknowledged bytes the consumer kernel expects in all; AllReady fires when the global counter
  // reaches it (at once, as an event, if it already has). UserError if it exceeds the counter.
  void set_expected_total(uint64_t bytes);
  // Clears table, counters and records for the next consumer kernel.
  void reset();

  // A write acknowledgement for [address, address + bytes) returning to this hub.
  void on_write_ack(uint64_t address, uint64_t bytes);

  const DependencyTable& table() const { return table_; }
  const std::vector<DamSignal>& signals() const { return signals_; }
  std::optional<Time> all_ready_time() const { return all_ready_at_; }
  uint64_t counter(uint32_t group) const;
  uint64_t global_counter() const { return global_; }
  DamCounters counters() const;

 private:
  struct Group {
    uint64_t threshold = 0;
    uint64_t counter = 0;
    bool signalled = false;
  };
  void check_counter_width(uint64_t value, const char* key, uint32_t bits) const;
  void process_ack(uint64_t address, uint64_t bytes);
  Group& group(uint32_t id);
  void emit(uint32_t group, Group& g, DamSignalKind kind);
  void maybe_all_ready();

  Simulator& sim_;
  DamConfig cfg_;
  HubClock clock_;
  SignalHook signal_;
  DependencyTable table_;
  // Sorted by id (AllReady visits groups in id order); a flat array, as a few hundred groups
  // are searched once per ack and map nodes scattered over the heap missed the cache.
  struct GroupSlot {
    uint32_t id;
    Group group;
  };
  std::vector<GroupSlot> groups_;

 public:
  // End-of-run conservation: every group signalled exactly once (ready, partly ready or retired).
  bool every_group_signalled_once() const {
    uint64_t unsignalled = 0;
    for (const GroupSlot& s : groups_) unsignalled += s.group.signalled ? 0 : 1;
    return unsignalled == 0 && n_.releases + n_.partial_releases + n_.retired_groups == groups_.size();
  }

 private:
  // The group the last ack counted toward (consecutive acks mostly feed one tile); cleared
  // whenever groups_ changes.
  uint32_t last_group_id_ = 0;
  Group* last_group_ = nullptr;
  std::optional<uint64_t> expected_;
  uint64_t global_ = 0;
  std::optional<Time> all_ready_at_;
  std::vector<DamSignal> signals_;
  DamCounters n_;  // counted_bytes is global_, filled in by counters()
  uint64_t epoch_ = 0;  // reset() invalidates acks still in the lookup pipeline
  // Acks in the lookup pipeline, in arrival (and so completion) order. Acks that complete in
  // the same hub cycle are processed by one event, in arrival order.
  struct PendingAck {
    Time at;
    uint64_t address;
    uint64_t bytes;
  };
  std::deque<PendingAck> pipeline_;
  void drain_pipeline();
};

}  // namespace moehub
