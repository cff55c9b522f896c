// MoE-Hub with redundant experts (paper VII-A2; the hub side, like hub_fabric.cpp, so not among
// the program lines of the Table I figure): the routing kernel stores each row with
// st.rowsp to its logical expert; the producer's hub looks the destination up in its one-to-many
// table (hub/replica_selector.h, hub.apt.replica_*) and sends the row to the replica its policy
// picks. Each replica's region, GEMM tiles and DAM context are those of an ordinary expert.
//
// The choices are made before the layer runs, each producer hub's rows in RowID order (the
// token-major order its routing kernel's blocks walk their tokens in). In the simulated kernel
// the blocks' stores interleave, so a row may reach the table in another order: with
// round-robin that changes which rows go where but not how many each replica receives from each
// producer; with load-aware it can move a few rows between replicas (docs/hub/section-vii.md 8).

#include <fmt/format.h>

#include "hub/area_model.h"
#include "sim/error.h"
#include "systems/moehub/moehub_state.h"

namespace moehub {

namespace {

// A table too small for the placement is refused by name before anything runs.
void check_replica_table(const ReplicaTableConfig& table, const ReplicaPlan& plan) {
  size_t replicated = 0, widest = 0;
  for (const std::vector<int32_t>& r : plan.replicas) {
    replicated += r.size() > 1;
    widest = std::max(widest, r.size());
  }
  if (replicated > table.entries) {
    throw UserError("hub.apt.replica_entries", fmt::format("{} logical experts have replicas; the table holds {} "
                                                           "(set hub.apt.replica_entries >= {})",
                                                           replicated, table.entries, replicated));
  }
  if (widest > table.max_replicas) {
    throw UserError("hub.apt.max_replicas", fmt::format("an expert has {} replicas; an entry holds {} (set "
                                                        "hub.apt.max_replicas >= {})",
                                                        widest, table.max_replicas, widest));
  }
}

const char* policy_name(ReplicaPolicy p) { return p == ReplicaPolicy::RoundRobin ? "round-robin" : "load-aware"; }

}  // namespace

std::optional<Workload> MoeHubSystemImpl::own_workload(const Workload& w) {
  if (w.redundant_experts() == 0) return std::nullopt;
  const ReplicaPlan& plan = w.replicas();
  check_replica_table(hub_.replica, plan);
  const auto n = static_cast<uint32_t>(w.tokens().gpus());
  selectors_.clear();
  for (uint32_t g = 0; g < n; ++g) selectors_.emplace_back(hub_.replica, g, n);
  // Every hub holds the same entries (the runtime programs them with the placement).
  std::vector<int64_t> entry_of(plan.replicas.size(), -1);
  for (size_t e = 0; e < plan.replicas.size(); ++e) {
    if (plan.replicas[e].size() < 2) continue;
    std::vector<ReplicaEndpoint> endpoints;
    for (const int32_t p : plan.replicas[e]) {
      endpoints.push_back({static_cast<uint32_t>(plan.gpu_of[static_cast<size_t>(p)]), static_cast<uint32_t>(p)});
    }
    for (ReplicaSelector& s : selectors_) entry_of[e] = s.add_entry(endpoints);
  }
  const Routing& logical = w.logical_routing();
  const int64_t k = logical.top_k();
  std::vector<int32_t> physical(static_cast<size_t>(logical.rows()));
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    ReplicaSelector& hub = selectors_[static_cast<size_t>(w.tokens().gpu_of_token(t))];
    for (int64_t j = 0; j < k; ++j) {
      const auto e = static_cast<size_t>(logical.expert(t, j));
      int32_t p = plan.replicas[e][0];
      if (entry_of[e] >= 0) {
        p = plan.replicas[e][hub.select(static_cast<uint32_t>(entry_of[e]))];
      } else {
        hub.note_row(static_cast<uint32_t>(plan.gpu_of[static_cast<size_t>(p)]));
      }
      physical[static_cast<size_t>(t * k + j)] = p;
    }
  }
  return w.with_replica_choice(physical);
}

// results[].hub.replica: the selections, the loads they gave each physical expert, and the
// table's cost (one hub; every GPU has one).
nlohmann::json MoeHubSystemImpl::replica_stats(Cluster& cluster) const {
  ReplicaCounters total;
  for (const ReplicaSelector& s : selectors_) ReplicaCounters::table().add(total, s.counters());
  nlohmann::json j = ReplicaCounters::table().to_json(total);
  j["policy"] = policy_name(hub_.replica.policy);
  j["entries_used"] = selectors_.front().used_entries();
  j["loads"] = replica_summary(cluster.workload().replicas(), cluster.workload().routing());
  const AreaEstimate a = estimate_replica_table_area(hub_, static_cast<uint32_t>(cluster.gpus()));
  j["table_storage_bits"] = a.total_bits;
  j["table_storage_mm2"] = a.total_mm2;
  j["table_logic_mm2"] = a.logic_mm2;
  j["table_mm2"] = a.storage_and_logic_mm2;
  return j;
}

}  // namespace moehub
