#include "moe/model_shape.h"

#include <fmt/format.h>

#include "config/param_table.h"
#include "moe/moe_params.h"
#include "sim/error.h"

namespace moehub {
namespace {

// Model sizes are bounded so that products with run.tokens (<= 2^40) stay finite in the
// resource estimate's long double sums; the memory budget then refuses what cannot run.
constexpr double kMaxSize = 2147483647.0;

ParamTable<ModelShape> model_table() {
  ParamTable<ModelShape> t;
  using M = ModelShape;
  t.string("model.name", &M::name, "Model name as published");
  t.integer("model.layers", &M::layers, "Transformer layers (each with attention and an MoE or dense FFN)")
      .at_least(1)
      .at_most(kMaxSize);
  t.integer("model.hidden", &M::hidden, "Hidden size H of the token activations").at_least(1).at_most(kMaxSize).in_unit("elements");
  t.integer("model.ffn_hidden", &M::ffn_hidden, "Expert FFN hidden size F").at_least(1).at_most(kMaxSize).in_unit("elements");
  const auto router = [](auto m) { return [m](M& s) -> auto& { return s.router.*m; }; };
  t.integer("model.experts", router(&RouterSpec::experts), "Routed experts per MoE layer").at_least(1).at_most(kMaxSize);
  t.integer("model.top_k", router(&RouterSpec::top_k), "Routed experts chosen per token").at_least(1).at_most(kMaxSize);
  t.boolean("model.gated", &M::gated, "Gated activation (SwiGLU): GEMM1 produces gate and up halves, F1 = 2F");
  t.integer("model.shared_experts", &M::shared_experts, "Always-active shared experts per MoE layer")
      .at_least(0)
      .at_most(kMaxSize);
  t.integer("model.shared_ffn_hidden", &M::shared_ffn_hidden, "FFN hidden size of one shared expert (0 when none)")
      .at_least(0)
      .at_most(kMaxSize)
      .in_unit("elements");
  t.boolean("model.shared_expert_gate", &M::shared_expert_gate,
            "Shared expert output scaled by a sigmoid gate (an H x 1 projection), as in Qwen-MoE");
  t.integer("model.dense_layers", &M::dense_layers, "Leading layers with a dense FFN instead of MoE")
      .at_least(0)
      .at_most(kMaxSize);
  t.integer("model.dense_ffn_hidden", &M::dense_ffn_hidden, "FFN hidden size of the dense layers (0 when none)")
      .at_least(0)
      .at_most(kMaxSize)
      .in_unit("elements");
  t.integer("model.attn_heads", &M::attn_heads, "Attention query heads").at_least(1).at_most(kMaxSize);
  t.integer("model.kv_heads", &M::kv_heads, "Attention key/value heads (GQA); equal to attn_heads for MHA and MLA")
      .at_least(1)
      .at_most(kMaxSize);
  t.integer("model.head_dim", &M::head_dim, "Query/key dimension per head").at_least(1).at_most(kMaxSize).in_unit("elements");
  t.integer("model.v_head_dim", &M::v_head_dim, "Value dimension per head (equals head_dim except in MLA)")
      .at_least(1)
      .at_most(kMaxSize)
      .in_unit("elements");
  t.integer("model.q_lora_rank", &M::q_lora_rank, "Low-rank query projection rank (MLA); 0 = full-rank H x heads*head_dim")
      .at_least(0)
      .at_most(kMaxSize)
      .in_unit("elements");
  t.integer("model.kv_lora_rank", &M::kv_lora_rank, "Low-rank key/value projection rank (MLA); 0 = full-rank per KV head")
      .at_least(0)
      .at_most(kMaxSize)
      .in_unit("elements");
  t.choice("model.dtype", &M::dtype_bytes, std::vector<std::pair<std::string, int64_t>>{{"bf16", 2}, {"fp16", 2}, {"fp32", 4}},
           "Activation and weight data type");
  // Router semantics: what the gate computes (the functional reference and real gating use them).
  t.choice("model.score_func", router(&RouterSpec::score),
           std::vector<std::pair<std::string, ScoreFunction>>{{"softmax", ScoreFunction::Softmax},
                                                              {"sigmoid", ScoreFunction::Sigmoid}},
           "Router score of each expert from its logit");
  t.boolean("model.norm_topk", router(&RouterSpec::norm_topk), "Divide the k chosen scores by their sum (routing weights sum to 1)");
  t.real("model.routed_scaling", router(&RouterSpec::routed_scaling), "Factor applied to the routing weights after normalisation")
      .positive();
  t.integer("model.routing_groups", router(&RouterSpec::groups), "Expert groups for group-limited routing (1 = no grouping)")
      .at_least(1)
      .at_most(kMaxSize);
  t.integer("model.routing_topk_groups", router(&RouterSpec::topk_groups),
            "Groups a token may choose its experts from (group-limited routing)")
      .at_least(1)
      .at_most(kMaxSize);
  t.choice("model.group_score", router(&RouterSpec::group_score),
           std::vector<std::pair<std::string, GroupScore>>{{"max", GroupScore::Max}, {"top2_sum", GroupScore::Top2Sum}},
           "Score of a group in group-limited routing: its best expert, or the sum of its best two");
  return t;
}

// FLOPs of one token through a (gated) FFN of hidden size f: GEMM1 H x F1 and GEMM2 F x H.
uint64_t ffn_flops(int64_t h, int64_t f, bool gated) {
  const int64_t f1 = gated ? 2 * f : f;
  return static_cast<uint64_t>(2 * h * f1 + 2 * f * h);
}

}  // namespace

void declare_model_params(ParamRegistry& r) { model_table().declare(r); }

ModelShape ModelShape::from(const Config& c) {
  ModelShape m;
  model_table().read(c, m);
  m.validate();
  return m;
}

void ModelShape::validate() const {
  const auto positive = [](int64_t v, const char* key) {
    if (v < 1) throw UserError(key, fmt::format("must be at least 1, got {}", v));
  };
  positive(layers, "model.layers");
  positive(hidden, "model.hidden");
  positive(ffn_hidden, "model.ffn_hidden");
  positive(router.experts, "model.experts");
  positive(router.top_k, "model.top_k");
  positive(attn_heads, "model.attn_heads");
  positive(kv_heads, "model.kv_heads");
  positive(head_dim, "model.head_dim");
  positive(v_head_dim, "model.v_head_dim");
  if (router.top_k > router.experts) {
    throw UserError("model.top_k", fmt::format("{} exceeds the number of experts (model.experts = {})", router.top_k,
                                               router.experts));
  }
  if (kv_heads > attn_heads || attn_heads % kv_heads != 0) {
    throw UserError("model.kv_heads", fmt::format("{} must divide model.attn_heads = {}", kv_heads, attn_heads));
  }
  if (shared_experts > 0 && shared_ffn_hidden < 1) {
    throw UserError("model.shared_ffn_hidden",
                    fmt::format("must be set when model.shared_experts = {}", shared_experts));
  }
  if (dense_layers > layers) {
    throw UserError("model.dense_layers", fmt::format("{} exceeds model.layers = {}", dense_layers, layers));
  }
  if (dense_layers > 0 && dense_ffn_hidden < 1) {
    throw UserError("model.dense_ffn_hidden", fmt::format("must be set when model.dense_layers = {}", dense_layers));
  }
  if (router.groups < 1 || router.experts % router.groups != 0) {
    throw UserError("model.routing_groups",
                    fmt::format("{} groups must divide model.experts = {}", router.groups, router.experts));
  }
  if (router.topk_groups > router.groups) {
    throw UserError("model.routing_topk_groups",
                    fmt::format("{} exceeds model.routing_groups = {}", router.topk_groups, router.groups));
  }
  const int64_t reachable = router.topk_groups * (router.experts / router.groups);
  if (router.top_k > reachable) {
    throw UserError("model.top_k", fmt::format("{} exceeds the {} experts in the {} chosen groups", router.top_k,
                                               reachable, router.topk_groups));
  }
  if (!(router.routed_scaling > 0)) throw UserError("model.routed_scaling", "must be greater than 0");
}

uint64_t ModelShape::row_bytes() const { return static_cast<uint64_t>(hidden * dtype_bytes); }
uint64_t ModelShape::gemm1_flops_per_row() const { return static_cast<uint64_t>(2 * hidden * gemm1_cols()); }
uint64_t ModelShape::gemm2_flops_per_row() const { return static_cast<uint64_t>(2 * ffn_hidden * hidden); }
uint64_t ModelShape::expert_flops_per_row() const { return gemm1_flops_per_row() + gemm2_flops_per_row(); }
uint64_t ModelShape::expert_weight_bytes() const {
  return static_cast<uint64_t>((hidden * gemm1_cols() + ffn_hidden * hidden) * dtype_bytes);
}
uint64_t ModelShape::router_flops_per_token() const { return static_cast<uint64_t>(2 * hidden * router.experts); }

uint64_t ModelShape::shared_expert_flops_per_token() const {
  if (shared_experts == 0) return 0;
  const uint64_t gate = shared_expert_gate ? static_cast<uint64_t>(2 * hidden) : 0;
  return static_cast<uint64_t>(shared_experts) * ffn_flops(hidden, shared_ffn_hidden, gated) + gate;
}

uint64_t ModelShape::shared_expert_weight_bytes() const {
  if (shared_experts == 0) return 0;
  const int64_t f1 = gated ? 2 * shared_ffn_hidden : shared_ffn_hidden;
  const int64_t per = hidden * f1 + shared_ffn_hidden * hidden;
  return static_cast<uint64_t>((shared_experts * per + (shared_expert_gate ? hidden : 0)) * dtype_bytes);
}

uint64_t ModelShape::dense_ffn_flops_per_token() const {
  return dense_layers == 0 ? 0 : ffn_flops(hidden, dense_ffn_hidden, gated);
}

}  // namespace moehub
