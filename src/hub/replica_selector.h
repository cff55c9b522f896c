#pragma once
// The producer hub's one-to-many destination table (paper VII-A2: "the static one-to-one
// expert-to-device mapping is turned into a dynamic one-to-many mapping ... extending APT ...
// selection policies between endpoints (e.g., round-robin or load-aware)"). An entry maps one
// logical destination (the MallocID the st.rowsp names) to up to `max_replicas` endpoints; the
// first store of a row looks it up and the row goes to the endpoint the policy picks:
//   round-robin: the entry's pointer, advanced per row;
//   load-aware:  the endpoint whose GPU this hub has sent the fewest rows so far (its per-peer
//                row counters, which count every row it sends, replicated or not); ties go to
//                the lower replica index.
// Destinations without replicas have no entry and pass unchanged (note_row counts them).

#include <cstdint>
#include <vector>

#include "hub/hub_config.h"
#include "sim/counters.h"

namespace moehub {

struct ReplicaCounters {
  uint64_t lookups = 0;                 // rows that hit an entry
  uint64_t round_robin_selections = 0;
  uint64_t load_aware_selections = 0;
  uint64_t local_selections = 0;        // the chosen endpoint is on this hub's GPU
  uint64_t lookup_cycles = 0;
  static const CounterTable<ReplicaCounters>& table();
};

struct ReplicaEndpoint {
  uint32_t gpu = 0;
  uint32_t id = 0;  // what the caller routes to (a region, a physical expert)
};

class ReplicaSelector {
 public:
  // `gpu`: this hub's GPU; `gpus`: peers counted by the load-aware policy.
  ReplicaSelector(const ReplicaTableConfig& config, uint32_t gpu, uint32_t gpus);

  // One entry per logical destination with 2+ endpoints; returns its index. std::logic_error
  // when the table is full or the entry too wide (the system checks sizes up front).
  uint32_t add_entry(std::vector<ReplicaEndpoint> endpoints);
  // One row of the entry: the endpoint chosen (its index in the entry's list).
  uint32_t select(uint32_t entry);
  // A row to a destination without replicas (the load-aware counters see every row).
  void note_row(uint32_t gpu);

  const std::vector<ReplicaEndpoint>& endpoints(uint32_t entry) const { return entries_.at(entry).endpoints; }
  const std::vector<uint64_t>& rows_to_gpu() const { return rows_to_gpu_; }
  const ReplicaCounters& counters() const { return n_; }
  uint32_t used_entries() const { return static_cast<uint32_t>(entries_.size()); }

 private:
  struct Entry {
    std::vector<ReplicaEndpoint> endpoints;
    uint32_t next = 0;  // round-robin pointer
  };
  ReplicaTableConfig cfg_;
  uint32_t gpu_;
  std::vector<Entry> entries_;
  std::vector<uint64_t> rows_to_gpu_;
  ReplicaCounters n_;
};

}  // namespace moehub
