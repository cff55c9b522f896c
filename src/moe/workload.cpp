#include "moe/workload.h"

#include <algorithm>
#include <optional>

#include "config/param_table.h"
#include "config/run_params.h"
#include "moe/layer_cost.h"
#include "moe/moe_params.h"
#include "moe/routing_trace.h"
#include "sim/error.h"
#include "moe/synthetic_routing.h"

namespace moehub {

namespace {

ParamTable<WorkloadConfig> workload_table() {
  ParamTable<WorkloadConfig> t;
  t.real("workload.imbalance_std", &WorkloadConfig::imbalance_std, "Requested std of the per-expert token fraction (0 = uniform)")
      .at_least(0)
      .at_most(1)
      .in_unit("fraction");
  t.string("workload.routing_trace", &WorkloadConfig::routing_trace,
           "Routing trace file (CSV or JSONL); empty for synthetic routing");
  t.integer("workload.trace_layer", &WorkloadConfig::trace_layer, "Layer of the routing trace to simulate")
      .at_least(0)
      .at_most(2147483647.0);
  t.integer_list("workload.expert_map", &WorkloadConfig::expert_map,
                 "GPU of each expert (one entry per expert); empty = contiguous blocks")
      .at_least(0)
      .at_most(4095);
  t.integer("workload.redundant_experts", &WorkloadConfig::redundant_experts,
            "Redundant copies of hot experts (DeepSeek-V3, EPLB): physical experts = model.experts + this, placed by "
            "EPLB from the layer's measured load; 0 = one copy per expert")
      .at_least(0)
      .at_most(4096)
      .in_unit("experts");
  t.integer("parallel.tp", &WorkloadConfig::tp,
            "Tensor-parallel degree of the experts (EP+TP, Megatron-LM's expert tensor parallelism): run.gpus = EP x TP, "
            "each expert sharded over TP consecutive GPUs; 1 = pure expert parallelism")
      .at_least(1)
      .at_most(64)
      .in_unit("GPUs");
  return t;
}

}  // namespace

void declare_workload_params(ParamRegistry& r) { workload_table().declare(r); }

WorkloadConfig WorkloadConfig::from(const Config& c) {
  WorkloadConfig w;
  const RunParams run = RunParams::from(c);
  w.gpus = run.gpus;
  w.tokens = run.tokens;
  w.seed = run.seed;
  workload_table().read(c, w);
  return w;
}

Workload::Workload(WorkloadConfig config, ModelShape model, Routing routing, TokenPartition tokens,
                   ExpertPlacement placement)
    : config_(std::move(config)),
      model_(std::move(model)),
      routing_(std::move(routing)),
      tokens_(tokens),
      placement_(std::move(placement)),
      plan_(routing_, tokens_, placement_),
      tp_(tokens_.gpus(), 1, model_.experts(), model_.ffn_hidden) {
  logical_.model = model_;
  replicas_ = ReplicaPlan::identity(placement_.map(), tokens_.gpus());
}

Workload Workload::replicated(WorkloadConfig config, const ModelShape& model, Routing logical, TokenPartition tokens) {
  ReplicaPlan plan = eplb_replicas(logical.tokens_per_expert(), config.redundant_experts, config.gpus);
  // The software systems' choice: SGLang's static map per source GPU (replication.h).
  const std::vector<std::vector<int32_t>> map = static_dispatch_map(plan);
  const int64_t k = logical.top_k();
  std::vector<int32_t> physical(static_cast<size_t>(logical.rows()));
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    const auto& row = map[static_cast<size_t>(tokens.gpu_of_token(t))];
    for (int64_t j = 0; j < k; ++j) physical[static_cast<size_t>(t * k + j)] = row[static_cast<size_t>(logical.expert(t, j))];
  }
  ModelShape pm = model;
  pm.router.experts = plan.physical();
  ExpertPlacement placement =
      ExpertPlacement::from_map(std::vector<int64_t>(plan.gpu_of.begin(), plan.gpu_of.end()), plan.physical(), config.gpus);
  Workload w(std::move(config), pm, physical_routing(logical, physical, plan.physical()), tokens, std::move(placement));
  w.logical_ = Logical{model, std::make_shared<const Routing>(std::move(logical))};
  w.replicas_ = std::move(plan);
  return w;
}

Workload Workload::tensor_parallel(WorkloadConfig config, const ModelShape& model, Routing logical, TokenPartition tokens) {
  const TpLayout tp(config.gpus, config.tp, model.experts(), model.ffn_hidden);
  const int64_t t_ = tp.tp(), k = logical.top_k();
  ModelShape shards = model;
  shards.ffn_hidden = tp.shard_ffn();
  shards.router.experts = tp.shard_experts();
  shards.router.top_k = k * t_;
  Routing physical(logical.tokens(), tp.shard_experts(), k * t_);
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t r = 0; r < t_; ++r) {
        physical.set(t, j * t_ + r, static_cast<int32_t>(tp.shard_expert(logical.expert(t, j), r)), logical.weight(t, j));
      }
    }
  }
  ExpertPlacement placement = ExpertPlacement::from_map(tp.shard_map(), tp.shard_experts(), config.gpus);
  Workload w(std::move(config), shards, std::move(physical), tokens, std::move(placement));
  w.logical_ = Logical{model, std::make_shared<const Routing>(std::move(logical))};
  w.tp_ = tp;
  return w;
}

Workload Workload::with_replica_choice(const std::vector<int32_t>& physical) const {
  Workload w(config_, model_, physical_routing(logical_routing(), physical, model_.experts()), tokens_, placement_);
  w.logical_ = logical_;
  w.replicas_ = replicas_;
  return w;
}

Workload Workload::with_gated_experts(bool gated) const {
  Workload w = *this;
  w.model_.gated = gated;
  w.logical_.model.gated = gated;
  return w;
}

Workload Workload::build(const WorkloadConfig& config, const ModelShape& model) {
  model.validate();
  TokenPartition tokens(config.tokens, config.gpus);
  if (config.redundant_experts > 0 && !config.expert_map.empty()) {
    throw UserError("workload.redundant_experts", "redundant experts are placed by EPLB; leave workload.expert_map empty");
  }
  // With replicas, EPLB places the physical experts (after the routing is known).
  if (config.tp > 1 && (config.redundant_experts > 0 || !config.expert_map.empty())) {
    throw UserError("parallel.tp", "EP+TP places experts in contiguous blocks per TP group; leave "
                                   "workload.redundant_experts at 0 and workload.expert_map empty");
  }
  std::optional<ExpertPlacement> placement;
  if (config.redundant_experts == 0 && config.tp == 1) {
    placement = ExpertPlacement::from_map_or_contiguous(config.expert_map, model.experts(), config.gpus);
  }
  Routing routing;
  if (config.routing_trace.empty()) {
    routing = generate_synthetic_routing(
        SyntheticRoutingSpec{config.tokens, model.experts(), model.top_k(), config.imbalance_std, config.seed});
  } else {
    routing = read_routing_trace(config.routing_trace,
                                 TraceExpectation{config.tokens, model.experts(), model.top_k(), config.trace_layer});
  }
  if (config.tp > 1) return tensor_parallel(config, model, std::move(routing), tokens);
  if (!placement) return replicated(config, model, std::move(routing), tokens);
  return Workload(config, model, std::move(routing), tokens, std::move(*placement));
}

nlohmann::json Workload::summary() const {
  nlohmann::json j;
  j["source"] = from_trace() ? "trace" : "synthetic";
  if (from_trace()) {
    j["trace_file"] = config_.routing_trace;
    j["trace_layer"] = config_.trace_layer;
  } else {
    j["requested_std"] = config_.imbalance_std;
  }
  const std::vector<int64_t> per_expert = logical_routing().tokens_per_expert();
  j["measured_std"] = load_std(per_expert);
  j["routed_rows"] = routing_.rows();
  // Only with replicas, so that a run without them reports exactly what it did before.
  if (config_.redundant_experts > 0) {
    j["redundant_experts"] = config_.redundant_experts;
    j["replication"] = replica_summary(replicas_, routing_);
    j["replication"]["dispatch"] = "static (SGLang's logical-to-rank map; the software systems)";
  }
  if (tp_.tp() > 1) {
    j["tp"] = {{"tp", tp_.tp()}, {"ep", tp_.ep()}, {"shard_ffn", tp_.shard_ffn()}, {"shard_experts", tp_.shard_experts()},
               {"shard_rows", routing_.rows()}};
  }
  j["tokens_per_expert"] = per_expert;
  j["max_tokens_per_expert"] = *std::max_element(per_expert.begin(), per_expert.end());
  j["tokens_per_gpu"] = tokens_.counts();
  std::vector<int64_t> into;
  nlohmann::json matrix = nlohmann::json::array();
  for (int s = 0; s < plan_.gpus(); ++s) {
    into.push_back(plan_.rows_into(s));
    std::vector<int64_t> row;
    for (int d = 0; d < plan_.gpus(); ++d) row.push_back(plan_.rows(s, d));
    matrix.push_back(row);
  }
  j["rows_into_gpu"] = into;
  j["rows_src_dst"] = matrix;
  j["remote_rows"] = plan_.remote_rows();
  j["remote_fraction"] = plan_.remote_fraction();
  j["expert_gpu"] = placement_.map();
  // The busiest GPU's attention (GPU 0 holds the most tokens when N does not divide M).
  j["attention_per_gpu"] = attention_cost(model_, tokens_.max_count()).to_json();
  return j;
}

}  // namespace moehub
