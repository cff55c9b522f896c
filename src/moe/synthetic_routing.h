#pragma once
// Synthetic routing with a controlled load imbalance. The per-expert load hits a requested
// standard deviation of the per-expert token fraction (load_std), then tokens draw their k
// distinct experts so that every expert receives exactly its load. See docs/workload.md.

#include <cstdint>
#include <vector>

#include "moe/routing.h"

namespace moehub {

struct SyntheticRoutingSpec {
  int64_t tokens = 0;
  int64_t experts = 0;
  int64_t top_k = 0;
  double imbalance_std = 0;  // requested load_std
  uint64_t seed = 0;
};

// The largest load_std any routing of this shape can have: k experts take every token, the
// others none (each token's k experts are distinct, so no expert exceeds `tokens` rows).
double max_load_std(int64_t experts, int64_t top_k);

// Rows per expert (summing to tokens * top_k, none above tokens) whose load_std is as close to
// the request as integer counts allow. Throws UserError naming workload.imbalance_std when the
// request exceeds max_load_std.
std::vector<int64_t> synthetic_expert_loads(const SyntheticRoutingSpec& spec);

// The generator's two steps apart, for past batches whose shape is blended from several draws
// (placement_history.h): the raw shape draw of a seed (one N(0, 1) value per expert, before
// centring and scaling), and the loads of a given raw shape (spec.seed orders the remainder's
// ties). synthetic_expert_loads(spec) = synthetic_expert_loads_of_shape(spec,
// synthetic_shape(spec.seed, spec.experts)); the spec is checked by synthetic_expert_loads only.
std::vector<double> synthetic_shape(uint64_t seed, int64_t experts);
std::vector<int64_t> synthetic_expert_loads_of_shape(const SyntheticRoutingSpec& spec, std::vector<double> shape);

// A full routing with exactly those loads; weights of each token are a flat Dirichlet draw
// (they sum to 1 and are sorted, largest first). Deterministic in the spec.
Routing generate_synthetic_routing(const SyntheticRoutingSpec& spec);

}  // namespace moehub
