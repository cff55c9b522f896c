#include "moe/replication.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

namespace {

// a / b > c / d for positive denominators, exactly (loads are row counts).
bool heavier(int64_t a, int64_t b, int64_t c, int64_t d) { return a * d > c * b; }

// replicate_experts: counts[e] = replicas of logical expert e; order = the logical expert of
// each physical id (the first E are the experts themselves, then one per redundant slot).
std::vector<int32_t> replicate(const std::vector<int64_t>& load, int64_t redundant, std::vector<int64_t>& counts) {
  const auto logical = static_cast<int32_t>(load.size());
  std::vector<int32_t> phy2log(load.size());
  std::iota(phy2log.begin(), phy2log.end(), 0);
  counts.assign(load.size(), 1);
  for (int64_t r = 0; r < redundant; ++r) {
    int32_t best = 0;
    for (int32_t e = 1; e < logical; ++e) {
      if (heavier(load[e], counts[e], load[best], counts[best])) best = e;
    }
    phy2log.push_back(best);
    ++counts[static_cast<size_t>(best)];
  }
  return phy2log;
}

}  // namespace

ReplicaPlan ReplicaPlan::identity(const std::vector<int32_t>& map, int64_t gpus) {
  ReplicaPlan p;
  p.gpus = gpus;
  p.gpu_of = map;
  p.logical_of.resize(map.size());
  std::iota(p.logical_of.begin(), p.logical_of.end(), 0);
  for (size_t e = 0; e < map.size(); ++e) p.replicas.push_back({static_cast<int32_t>(e)});
  return p;
}

ReplicaPlan eplb_replicas(const std::vector<int64_t>& load, int64_t redundant, int64_t gpus) {
  const auto logical = static_cast<int64_t>(load.size());
  const int64_t physical = logical + redundant;
  if (redundant < 0) throw UserError("workload.redundant_experts", "must not be negative");
  if (physical < gpus) {
    throw UserError("workload.redundant_experts",
                    fmt::format("{} experts + {} redundant = {} physical experts leave some of the {} GPUs without one",
                                logical, redundant, physical, gpus));
  }
  std::vector<int64_t> counts;
  const std::vector<int32_t> phy2log = replicate(load, redundant, counts);
  // Heaviest load per replica first; ties keep the lower physical id (a stable order).
  std::vector<int32_t> order(static_cast<size_t>(physical));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const auto la = static_cast<size_t>(phy2log[a]), lb = static_cast<size_t>(phy2log[b]);
    return heavier(load[la], counts[la], load[lb], counts[lb]);
  });
  const int64_t slots = (physical + gpus - 1) / gpus;
  std::vector<double> pack_load(static_cast<size_t>(gpus), 0.0);
  std::vector<std::vector<int32_t>> packs(static_cast<size_t>(gpus));
  for (const int32_t p : order) {
    size_t best = SIZE_MAX;
    for (size_t g = 0; g < packs.size(); ++g) {
      if (static_cast<int64_t>(packs[g].size()) >= slots) continue;
      if (best == SIZE_MAX || pack_load[g] < pack_load[best]) best = g;
    }
    const auto l = static_cast<size_t>(phy2log[static_cast<size_t>(p)]);
    packs[best].push_back(phy2log[static_cast<size_t>(p)]);
    pack_load[best] += static_cast<double>(load[l]) / static_cast<double>(counts[l]);
  }
  ReplicaPlan plan;
  plan.gpus = gpus;
  plan.replicas.resize(static_cast<size_t>(logical));
  for (size_t g = 0; g < packs.size(); ++g) {
    for (const int32_t l : packs[g]) {
      plan.replicas[static_cast<size_t>(l)].push_back(static_cast<int32_t>(plan.logical_of.size()));
      plan.logical_of.push_back(l);
      plan.gpu_of.push_back(static_cast<int32_t>(g));
    }
  }
  return plan;
}

std::vector<std::vector<int32_t>> static_dispatch_map(const ReplicaPlan& plan) {
  std::vector<std::vector<int32_t>> map(static_cast<size_t>(plan.gpus), std::vector<int32_t>(plan.replicas.size(), -1));
  for (size_t e = 0; e < plan.replicas.size(); ++e) {
    const std::vector<int32_t>& reps = plan.replicas[e];
    size_t next = 0;  // the remote GPUs take the replicas in turn
    for (size_t g = 0; g < map.size(); ++g) {
      for (const int32_t p : reps) {
        if (plan.gpu_of[static_cast<size_t>(p)] == static_cast<int32_t>(g)) {
          map[g][e] = p;
          break;
        }
      }
      if (map[g][e] < 0) map[g][e] = reps[next++ % reps.size()];
    }
  }
  return map;
}

std::vector<int32_t> static_dispatch(const ReplicaPlan& plan, const Routing& logical, const TokenPartition& tokens) {
  const std::vector<std::vector<int32_t>> map = static_dispatch_map(plan);
  const int64_t k = logical.top_k();
  std::vector<int32_t> physical(static_cast<size_t>(logical.rows()));
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    const auto& row = map[static_cast<size_t>(tokens.gpu_of_token(t))];
    for (int64_t j = 0; j < k; ++j) physical[static_cast<size_t>(t * k + j)] = row[static_cast<size_t>(logical.expert(t, j))];
  }
  return physical;
}

double max_over_mean(const std::vector<int64_t>& counts) {
  int64_t sum = 0, most = 0;
  for (const int64_t c : counts) {
    sum += c;
    most = std::max(most, c);
  }
  if (sum == 0) return 0;
  return static_cast<double>(most) * static_cast<double>(counts.size()) / static_cast<double>(sum);
}

std::vector<int64_t> rows_per_gpu(const ReplicaPlan& plan, const std::vector<int64_t>& rows_per_physical) {
  std::vector<int64_t> rows(static_cast<size_t>(plan.gpus), 0);
  for (size_t p = 0; p < rows_per_physical.size(); ++p) rows[static_cast<size_t>(plan.gpu_of[p])] += rows_per_physical[p];
  return rows;
}

Routing physical_routing(const Routing& logical, const std::vector<int32_t>& physical, int64_t physical_experts) {
  if (static_cast<int64_t>(physical.size()) != logical.rows()) throw std::logic_error("physical_routing: one id per row");
  Routing r(logical.tokens(), physical_experts, logical.top_k());
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    for (int64_t j = 0; j < logical.top_k(); ++j) {
      r.set(t, j, physical[static_cast<size_t>(t * logical.top_k() + j)], logical.weight(t, j));
    }
  }
  return r;
}

nlohmann::json replica_summary(const ReplicaPlan& plan, const Routing& physical) {
  const std::vector<int64_t> rows = physical.tokens_per_expert();
  nlohmann::json j;
  j["physical_experts"] = plan.physical();
  j["logical_of_physical"] = plan.logical_of;
  j["gpu_of_physical"] = plan.gpu_of;
  j["replicas"] = plan.replicas;
  j["tokens_per_physical_expert"] = rows;
  j["max_tokens_per_physical_expert"] = rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
  j["measured_std_physical"] = load_std(rows);
  return j;
}

}  // namespace moehub
