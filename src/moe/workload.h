#pragma once
// The workload of one simulated MoE layer, assembled from the resolved config: the model
// shape, the routing (synthetic with a requested imbalance, or a trace), the token partition,
// the expert placement and the dispatch plan that follows. Systems take a `const Workload&`.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "moe/model_shape.h"
#include "moe/placement.h"
#include "moe/placement_history.h"
#include "moe/replication.h"
#include "moe/routing.h"
#include "moe/tp_layout.h"

namespace moehub {

struct WorkloadConfig {
  int64_t gpus = 1;                  // run.gpus
  int64_t tokens = 1;                // run.tokens (all GPUs)
  uint64_t seed = 0;                 // run.seed
  double imbalance_std = 0;          // workload.imbalance_std
  std::string routing_trace;         // workload.routing_trace (empty: synthetic)
  int64_t trace_layer = 0;           // workload.trace_layer
  std::vector<int64_t> expert_map;   // workload.expert_map (empty: contiguous)
  int64_t redundant_experts = 0;     // workload.redundant_experts (0: no replicas)
  PlacementLoad placement_load = PlacementLoad::ThisLayer;  // workload.placement_load
  int64_t placement_window = 1;      // workload.placement_window (past batches)
  double placement_correlation = 0;  // workload.placement_correlation
  int64_t tp = 1;                    // parallel.tp (1: pure expert parallelism)

  static WorkloadConfig from(const Config& config);
};

class Workload {
 public:
  // Checks in this order: tokens vs GPUs (run.tokens), placement (model.experts or
  // workload.expert_map), then builds or reads the routing. Errors are UserErrors.
  // With redundant experts the placement is EPLB's (replication.h) from the load
  // workload.placement_load names (placement_history.h: this batch's, or past batches') and
  // the routing is the software systems' physical view (SGLang's static dispatch map).
  // With parallel.tp = T > 1 the physical experts are the E * T shard experts of tp_layout.h
  // (FFN width F / T, k * T slots per token: slot j * T + r is slot j's TP rank r, with slot
  // j's weight), so that each shard row is a row of its own and the shards' partial outputs,
  // weighted and summed, give the layer's output.
  static Workload build(const WorkloadConfig& config, const ModelShape& model);
  // The same workload with each routed row sent to physical[t * k + j] (a replica of the row's
  // logical expert): how a system that picks replicas itself (MoE-Hub's hub) sees the layer.
  Workload with_replica_choice(const std::vector<int32_t>& physical) const;
  // The same workload whose experts (physical and logical) are gated or plain FFNs: how a
  // system whose real code builds other experts than the preset's (Tutel's `ffn` type in the
  // MoE-Hub authors' harness) sees the layer, so that its functional reference computes them too.
  Workload with_gated_experts(bool gated) const;

  // What the systems move and compute: physical experts (model().experts() = E + R, each
  // physical expert with its own placement) and the routing over them. Without redundant
  // experts physical = logical.
  const ModelShape& model() const { return model_; }
  const Routing& routing() const { return routing_; }
  // What the router computes: the model's E logical experts and their routing.
  const ModelShape& logical_model() const { return logical_.model; }
  int64_t logical_experts() const { return logical_.model.experts(); }
  const Routing& logical_routing() const { return logical_.routing ? *logical_.routing : routing_; }
  const ReplicaPlan& replicas() const { return replicas_; }
  int64_t redundant_experts() const { return config_.redundant_experts; }
  // The TP layout (tp() == 1: pure expert parallelism).
  const TpLayout& tp() const { return tp_; }
  const TokenPartition& tokens() const { return tokens_; }
  const ExpertPlacement& placement() const { return placement_; }
  const DispatchPlan& plan() const { return plan_; }
  bool from_trace() const { return !config_.routing_trace.empty(); }
  double measured_std() const { return load_std(logical_routing().tokens_per_expert()); }

  // The `workload` section of the run report.
  nlohmann::json summary() const;

 private:
  Workload(WorkloadConfig config, ModelShape model, Routing routing, TokenPartition tokens, ExpertPlacement placement);
  // Replicated: `logical` is the router's routing, `routing` its physical view under `replicas`.
  static Workload replicated(WorkloadConfig config, const ModelShape& model, Routing logical, TokenPartition tokens);
  // EP+TP: `logical` is the router's routing, the physical view its shard rows.
  static Workload tensor_parallel(WorkloadConfig config, const ModelShape& model, Routing logical, TokenPartition tokens);

  // The logical view, kept apart only when there are redundant experts.
  struct Logical {
    ModelShape model;
    std::shared_ptr<const Routing> routing;  // null: the same as routing_
  };

  WorkloadConfig config_;
  Logical logical_;
  nlohmann::json placement_source_;  // with replicas: the load EPLB placed from, against the oracle (report)
  ReplicaPlan replicas_;
  ModelShape model_;
  Routing routing_;
  TokenPartition tokens_;
  ExpertPlacement placement_;
  DispatchPlan plan_;
  TpLayout tp_;
};

}  // namespace moehub
