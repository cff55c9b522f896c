// Tutel's parameters (tutel_system.h) and which parallel.tp it runs.

#include <fmt/format.h>

#include "config/param_table.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "systems/tutel/tutel_system.h"

namespace moehub {

namespace {

ParamTable<TutelConfig> tutel_table() {
  ParamTable<TutelConfig> t;
  t.real("systems.tutel.capacity_factor", &TutelConfig::capacity_factor,
         "Tutel capacity factor: > 0 static capacity k*int(cf*ceil(T/E)); 0 dynamic (max count); < 0 dynamic capped at |cf|");
  t.choice("systems.tutel.overlap_degree", &TutelConfig::overlap_degree,
           std::vector<std::pair<std::string, int>>{
               {"adaptive", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}, {"16", 16}, {"32", 32}},
           "Chunks of the capacity dimension pipelined between all-to-all and experts (adaptive: see docs/systems/tutel.md)");
  t.choice("systems.tutel.expert_ffn", &TutelConfig::expert_ffn, {"plain", "model"},
           "Tutel's experts: plain = its 'ffn' type (fc1, activation, fc2; no gate projection) as the MoE-Hub "
           "authors' harness builds it; model = the model preset's experts (gated GEMM1 when model.gated)");
  t.choice("systems.tutel.a2a_algo", &TutelConfig::a2a_algo, {"linear", "2dh"},
           "Tutel's all-to-all: linear = one NCCL all-to-all over every GPU; 2dh = use_2dh=True, a leg between "
           "nodes over same-local-rank GPUs and one inside the node with re-layout copies (degree 1: between "
           "first; degree > 1: the extension, inside first); default linear: MOELayer's use_2dh=False, "
           "tutel@71db950 tutel/impls/moe_layer.py:81");
  t.choice("systems.tutel.parallel_type", &TutelConfig::parallel_type, {"adaptive:1", "model"},
           "MOELayer's parallel_type: adaptive:1 = Tutel's default (moe_layer.py:80, 111-115; no expert TP); "
           "model = with fewer experts than GPUs each expert sharded over sharded_count = N / E GPUs (needs "
           "parallel.tp = N / E): the dispatch buffer repeated to every shard, F / T columns per GPU, the "
           "partial outputs summed after the combine (microsoft/tutel 71db950 tutel/impls/moe_layer.py:102-106, "
           "118-119, 292-309; tutel/experts/ffn.py:79-98)");
  t.integer("systems.tutel.nccl_cta_threads", [](TutelConfig& c) -> uint32_t& { return c.nccl.threads; },
            "Threads per NCCL CTA")
      .at_least(32)
      .at_most(1024);
  return t;
}

// Tutel v0.3.0's only expert-TP path (docs/systems/ep-tp.md), refused under its default.
constexpr const char* kTutelNoTpPath =
    "Tutel v0.3.0 shards an expert only with fewer experts than GPUs, one expert per TP group of N / E GPUs and "
    "parallel_type 'model' (microsoft/tutel @71db950 tutel/impls/moe_layer.py L102-106, L118-119, L292-309), which "
    "this model runs with systems.tutel.parallel_type = model; under the default 'adaptive:1' (L80, L111-115) "
    "it is not TP";

}  // namespace

void TutelConfig::declare(ParamRegistry& r) { tutel_table().declare(r); }

TutelConfig TutelConfig::from(const Config& c) {
  TutelConfig t;
  tutel_table().read(c, t);
  return t;
}

std::string tutel_tp_refusal(const Config& c) {
  const int64_t tp = WorkloadConfig::from(c).tp, n = WorkloadConfig::from(c).gpus;
  const int64_t e = ModelShape::from(c).experts();
  if (tp <= 1) return {};
  if (TutelConfig::from(c).parallel_type != "model") {
    return fmt::format("has no EP+TP model: {}; run it with parallel.tp = 1 (got {})", kTutelNoTpPath, tp);
  }
  // sharded_count = world_size // num_global_experts only when E < N (moe_layer.py L102-106), and
  // the fc2-bias group needs E | N (create_groups_from_world's assert, communicate.py L71).
  if (e >= n) {
    return fmt::format("shards an expert only with fewer experts than GPUs (microsoft/tutel @71db950 "
                       "tutel/impls/moe_layer.py L102-106: {} experts on {} GPUs keep sharded_count 1); run it with "
                       "parallel.tp = 1 (got {})",
                       e, n, tp);
  }
  if (e * tp != n) {
    return fmt::format("runs EP+TP only at parallel.tp = N / E: Tutel's expert TP degree is sharded_count = "
                       "world_size // num_global_experts (microsoft/tutel @71db950 tutel/impls/moe_layer.py L102-106, "
                       "L118-119), and its fc2-bias groups need E to divide N (communicate.py L71); run it with "
                       "parallel.tp = {} (got {})",
                       n % e == 0 ? fmt::format("{}", n / e) : fmt::format("N / E, E dividing N = {}", n), tp);
  }
  return {};
}

}  // namespace moehub
