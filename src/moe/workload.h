#pragma once
// The workload of one simulated MoE layer, assembled from the resolved config: the model
// shape, the routing (synthetic with a requested imbalance, or a trace), the token partition,
// the expert placement and the dispatch plan that follows. Systems take a `const Workload&`.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "moe/model_shape.h"
#include "moe/placement.h"
#include "moe/routing.h"

namespace moehub {

struct WorkloadConfig {
  int64_t gpus = 1;                  // run.gpus
  int64_t tokens = 1;                // run.tokens (all GPUs)
  uint64_t seed = 0;                 // run.seed
  double imbalance_std = 0;          // workload.imbalance_std
  std::string routing_trace;         // workload.routing_trace (empty: synthetic)
  int64_t trace_layer = 0;           // workload.trace_layer
  std::vector<int64_t> expert_map;   // workload.expert_map (empty: contiguous)

  static WorkloadConfig from(const Config& config);
};

class Workload {
 public:
  // Checks in this order: tokens vs GPUs (run.tokens), placement (model.experts or
  // workload.expert_map), then builds or reads the routing. Errors are UserErrors.
  static Workload build(const WorkloadConfig& config, const ModelShape& model);

  const ModelShape& model() const { return model_; }
  const Routing& routing() const { return routing_; }
  const TokenPartition& tokens() const { return tokens_; }
  const ExpertPlacement& placement() const { return placement_; }
  const DispatchPlan& plan() const { return plan_; }
  bool from_trace() const { return !config_.routing_trace.empty(); }
  double measured_std() const { return load_std(routing_.tokens_per_expert()); }

  // The `workload` section of the run report.
  nlohmann::json summary() const;

 private:
  Workload(WorkloadConfig config, ModelShape model, Routing routing, TokenPartition tokens, ExpertPlacement placement);

  WorkloadConfig config_;
  ModelShape model_;
  Routing routing_;
  TokenPartition tokens_;
  ExpertPlacement placement_;
  DispatchPlan plan_;
};

}  // namespace moehub
