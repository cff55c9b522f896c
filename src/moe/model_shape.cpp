#include "moe/model_shape.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {
namespace {

int64_t dtype_size(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp32") return 4;
  throw std::logic_error("unknown dtype " + dtype);
}

// FLOPs of one token through a (gated) FFN of hidden size f: GEMM1 H x F1 and GEMM2 F x H.
uint64_t ffn_flops(int64_t h, int64_t f, bool gated) {
  const int64_t f1 = gated ? 2 * f : f;
  return static_cast<uint64_t>(2 * h * f1 + 2 * f * h);
}

}  // namespace

ModelShape ModelShape::from(const Config& c) {
  ModelShape m;
  m.name = c.string("model.name");
  m.layers = c.integer("model.layers");
  m.hidden = c.integer("model.hidden");
  m.ffn_hidden = c.integer("model.ffn_hidden");
  m.gated = c.boolean("model.gated");
  m.shared_experts = c.integer("model.shared_experts");
  m.shared_ffn_hidden = c.integer("model.shared_ffn_hidden");
  m.shared_expert_gate = c.boolean("model.shared_expert_gate");
  m.dense_layers = c.integer("model.dense_layers");
  m.dense_ffn_hidden = c.integer("model.dense_ffn_hidden");
  m.attn_heads = c.integer("model.attn_heads");
  m.kv_heads = c.integer("model.kv_heads");
  m.head_dim = c.integer("model.head_dim");
  m.v_head_dim = c.integer("model.v_head_dim");
  m.q_lora_rank = c.integer("model.q_lora_rank");
  m.kv_lora_rank = c.integer("model.kv_lora_rank");
  m.dtype_bytes = dtype_size(c.string("model.dtype"));
  m.router.experts = c.integer("model.experts");
  m.router.top_k = c.integer("model.top_k");
  m.router.score = c.string("model.score_func") == "sigmoid" ? ScoreFunction::Sigmoid : ScoreFunction::Softmax;
  m.router.norm_topk = c.boolean("model.norm_topk");
  m.router.routed_scaling = c.real("model.routed_scaling");
  m.router.groups = c.integer("model.routing_groups");
  m.router.topk_groups = c.integer("model.routing_topk_groups");
  m.router.group_score = c.string("model.group_score") == "top2_sum" ? GroupScore::Top2Sum : GroupScore::Max;
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
