#include "moe/workload.h"

#include <algorithm>
#include <fmt/format.h>
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
  t.choice("workload.placement_load", &WorkloadConfig::placement_load,
           std::vector<std::pair<std::string, PlacementLoad>>{{"this-layer", PlacementLoad::ThisLayer},
                                                              {"previous", PlacementLoad::Previous}},
           "The load EPLB places redundant experts from: this-layer = the simulated batch's own (an oracle); previous = "
           "the sum of workload.placement_window past batches' (SGLang rebalances from a window of past forward "
           "passes; docs/workload.md)");
  t.integer("workload.placement_window", &WorkloadConfig::placement_window,
            "Past batches whose loads EPLB sums with placement_load = previous (synthetic: draws of the generator; "
            "trace: the layers before workload.trace_layer)")
      .at_least(1)
      .at_most(1000)
      .in_unit("batches");
  t.real("workload.placement_correlation", &WorkloadConfig::placement_correlation,
         "Correlation of each synthetic past batch's expert popularity with the simulated batch's (placement_load = "
         "previous): 0 = independent draws, 1 = the same popularity")
      .at_least(0)
      .at_most(1)
      .in_unit("fraction");
  t.integer("parallel.tp", &WorkloadConfig::tp,
            "Tensor-parallel degree of the experts (EP+TP, Megatron-LM's expert tensor parallelism): run.gpus = EP x TP, "
            "each expert sharded over TP consecutive GPUs; 1 = pure expert parallelism")
      .at_least(1)
      .at_most(64)
      .in_unit("GPUs");
  return t;
}

// The load EPLB places from (placement_history.h); `source` gets what the report says of it.
std::vector<int64_t> placement_load(const WorkloadConfig& c, const ModelShape& model, const Routing& logical,
                                    nlohmann::json& source) {
  if (c.placement_load == PlacementLoad::ThisLayer) {
    source["placement_load"] = "this-layer";
    return logical.tokens_per_expert();
  }
  source["placement_load"] = "previous";
  source["placement_window"] = c.placement_window;
  std::vector<int64_t> load;
  if (c.routing_trace.empty()) {
    load = synthetic_history_load(
        SyntheticRoutingSpec{c.tokens, model.experts(), model.top_k(), c.imbalance_std, c.seed}, c.placement_window,
        c.placement_correlation);
    source["placement_correlation"] = c.placement_correlation;
    source["placement_from"] = fmt::format("synthetic: past batches 1..{} (seeds derived from run.seed {})", c.placement_window, c.seed);
  } else {
    const int64_t first = c.trace_layer - c.placement_window;
    if (first < 0) {
      throw UserError("workload.placement_window",
                      fmt::format("{} past layers of the trace are needed before workload.trace_layer = {}; it has {}",
                                  c.placement_window, c.trace_layer, c.trace_layer));
    }
    load = read_trace_layer_loads(c.routing_trace,
                                  TraceExpectation{c.tokens, model.experts(), model.top_k(), c.trace_layer}, first,
                                  c.trace_layer - 1);
    source["placement_from"] = fmt::format("trace layers {}..{}", first, c.trace_layer - 1);
  }
  source["placement_tokens_per_expert"] = load;
  return load;
}

// Per-physical-expert and per-GPU balance of a placement's rows.
nlohmann::json placement_balance(const ReplicaPlan& plan, const std::vector<int64_t>& rows) {
  const std::vector<int64_t> gpu = rows_per_gpu(plan, rows);
  return {{"max_tokens_per_physical_expert", rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end())},
          {"max_over_mean_physical", max_over_mean(rows)},
          {"max_rows_per_gpu", *std::max_element(gpu.begin(), gpu.end())},
          {"max_over_mean_gpu", max_over_mean(gpu)}};
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
  nlohmann::json source;
  const std::vector<int64_t> load = placement_load(config, model, logical, source);
  ReplicaPlan plan = eplb_replicas(load, config.redundant_experts, config.gpus);
  // The software systems' choice: SGLang's static map per source GPU (replication.h).
  const std::vector<int32_t> physical = static_dispatch(plan, logical, tokens);
  if (config.placement_load == PlacementLoad::Previous) {
    // What EPLB would have done with this batch's own load, for the report.
    const ReplicaPlan oracle = eplb_replicas(logical.tokens_per_expert(), config.redundant_experts, config.gpus);
    const std::vector<int64_t> rows =
        physical_routing(logical, static_dispatch(oracle, logical, tokens), oracle.physical()).tokens_per_expert();
    source["oracle"] = placement_balance(oracle, rows);
  }
  ModelShape pm = model;
  pm.router.experts = plan.physical();
  ExpertPlacement placement =
      ExpertPlacement::from_map(std::vector<int64_t>(plan.gpu_of.begin(), plan.gpu_of.end()), plan.physical(), config.gpus);
  Workload w(std::move(config), pm, physical_routing(logical, physical, plan.physical()), tokens, std::move(placement));
  w.logical_ = Logical{model, std::make_shared<const Routing>(std::move(logical))};
  w.replicas_ = std::move(plan);
  w.placement_source_ = std::move(source);
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
  w.placement_source_ = placement_source_;
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
    nlohmann::json& rep = j["replication"];
    const nlohmann::json achieved = placement_balance(replicas_, rep["tokens_per_physical_expert"].get<std::vector<int64_t>>());
    rep["max_over_mean_physical"] = achieved["max_over_mean_physical"];
    rep["max_rows_per_gpu"] = achieved["max_rows_per_gpu"];
    rep["max_over_mean_gpu"] = achieved["max_over_mean_gpu"];
    for (const auto& [key, value] : placement_source_.items()) rep[key] = value;
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
