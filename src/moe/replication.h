#pragma once
// Redundant copies of hot experts (DeepSeek-V3 report, Sec. 3.4 "redundant experts"; its EPLB
// balancer, github.com/deepseek-ai/EPLB eplb.py): logical experts E, physical experts
// P = E + R, each physical expert a copy of one logical expert's weights placed on one GPU.
// eplb_replicas() follows eplb.py's global policy from a measured load; the software systems
// then map each routed (token, logical expert) to one physical replica before dispatch
// (static_dispatch_map, as SGLang's EPLB dispatch does); MoE-Hub chooses in its hub instead
// (src/hub/replica_selector.h).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "moe/placement.h"
#include "moe/routing.h"

namespace moehub {

struct ReplicaPlan {
  int64_t gpus = 0;
  std::vector<int32_t> logical_of;               // per physical expert: its logical expert
  std::vector<int32_t> gpu_of;                   // per physical expert: its GPU
  std::vector<std::vector<int32_t>> replicas;    // per logical expert: its physical ids, ascending

  int64_t logical() const { return static_cast<int64_t>(replicas.size()); }
  int64_t physical() const { return static_cast<int64_t>(logical_of.size()); }
  // No redundancy: physical expert e is logical expert e on GPU `map[e]`.
  static ReplicaPlan identity(const std::vector<int32_t>& map, int64_t gpus);
};

// eplb.py's global policy for one layer: (1) replicate_experts: each redundant slot goes to the
// logical expert with the largest load per replica (ties: lowest id); (2) balanced_packing: the
// physical experts, heaviest load per replica first (ties: lowest physical id), each to the GPU
// with the least load among those with a free slot (ties: lowest GPU). Every GPU has
// ceil(P / N) slots; eplb.py asserts N divides P, so that every slot fills; here, when N does not
// divide P, the free slots fall where the load-balancing packing leaves them
// (an extension, so that e.g. 256 + 8 experts fit 16 GPUs). Physical ids are numbered by GPU,
// then by the order the packing filled it (eplb.py's phy2pphy = pack x slots + rank).
// Throws UserError naming workload.redundant_experts when P < N (a GPU without experts) or R < 0.
ReplicaPlan eplb_replicas(const std::vector<int64_t>& load, int64_t redundant, int64_t gpus);

// SGLang's static EP dispatch (sglang/srt/eplb/expert_location.py,
// compute_logical_to_rank_dispatch_physical_map): source GPU g sends every row of logical
// expert e to one replica: the replica on g if there is one (the lowest rank), else the GPUs
// without a local replica are spread evenly over all replicas (SGLang's _fair_choices shuffles
// with a seeded random.Random; here in GPU order, replica rank order: the same counts).
// Result: map[g][e] = physical id.
std::vector<std::vector<int32_t>> static_dispatch_map(const ReplicaPlan& plan);

// Each routed row's physical expert under static_dispatch_map, the row's source GPU being its
// token's: physical[t * k + j].
std::vector<int32_t> static_dispatch(const ReplicaPlan& plan, const Routing& logical, const TokenPartition& tokens);

// The largest count over the mean count (1 = perfectly even; 0 for no rows).
double max_over_mean(const std::vector<int64_t>& counts);

// Rows each GPU's physical experts receive.
std::vector<int64_t> rows_per_gpu(const ReplicaPlan& plan, const std::vector<int64_t>& rows_per_physical);

// The routing with each slot's expert replaced by physical[t * k + j] (weights kept).
Routing physical_routing(const Routing& logical, const std::vector<int32_t>& physical, int64_t physical_experts);

// Rows per physical expert of a physical routing grouped by logical expert and the plan's map,
// for the report: {"physical_experts", "logical_of_physical", "gpu_of_physical", "replicas",
// "tokens_per_physical_expert", "max_tokens_per_physical_expert", "measured_std_physical"}.
nlohmann::json replica_summary(const ReplicaPlan& plan, const Routing& physical);

}  // namespace moehub
