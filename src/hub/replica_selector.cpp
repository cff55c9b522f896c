#include "hub/replica_selector.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

const CounterTable<ReplicaCounters>& ReplicaCounters::table() {
  using S = ReplicaCounters;
  static const CounterTable<S> t{
      {"lookups", "rows", "rows whose destination had replicas (one table lookup each)", &S::lookups},
      {"round_robin_selections", "rows", "replicas chosen by the round-robin pointer", &S::round_robin_selections},
      {"load_aware_selections", "rows", "replicas chosen by the per-peer row counters", &S::load_aware_selections},
      {"local_selections", "rows", "rows whose chosen replica is on the producer's own GPU", &S::local_selections},
      {"lookup_cycles", "cycles", "hub cycles of those lookups (pipelined beside the store path)", &S::lookup_cycles}};
  return t;
}

ReplicaSelector::ReplicaSelector(const ReplicaTableConfig& config, uint32_t gpu, uint32_t gpus)
    : cfg_(config), gpu_(gpu), rows_to_gpu_(gpus, 0) {}

uint32_t ReplicaSelector::add_entry(std::vector<ReplicaEndpoint> endpoints) {
  if (entries_.size() >= cfg_.entries) throw std::logic_error(fmt::format("replica table full ({} entries)", cfg_.entries));
  if (endpoints.empty() || endpoints.size() > cfg_.max_replicas) {
    throw std::logic_error(fmt::format("replica entry of {} endpoints (at most {})", endpoints.size(), cfg_.max_replicas));
  }
  for (const ReplicaEndpoint& e : endpoints) {
    if (e.gpu >= rows_to_gpu_.size()) throw std::logic_error(fmt::format("replica endpoint on GPU {}", e.gpu));
  }
  entries_.push_back(Entry{std::move(endpoints), 0});
  return static_cast<uint32_t>(entries_.size() - 1);
}

uint32_t ReplicaSelector::select(uint32_t entry) {
  Entry& e = entries_.at(entry);
  uint32_t pick = 0;
  if (cfg_.policy == ReplicaPolicy::RoundRobin) {
    pick = e.next;
    e.next = (e.next + 1) % static_cast<uint32_t>(e.endpoints.size());
    ++n_.round_robin_selections;
  } else {
    for (uint32_t i = 1; i < e.endpoints.size(); ++i) {
      if (rows_to_gpu_[e.endpoints[i].gpu] < rows_to_gpu_[e.endpoints[pick].gpu]) pick = i;
    }
    ++n_.load_aware_selections;
  }
  ++n_.lookups;
  n_.lookup_cycles += cfg_.lookup_cycles;
  const uint32_t g = e.endpoints[pick].gpu;
  if (g == gpu_) ++n_.local_selections;
  ++rows_to_gpu_[g];
  return pick;
}

void ReplicaSelector::note_row(uint32_t gpu) { ++rows_to_gpu_.at(gpu); }

}  // namespace moehub
