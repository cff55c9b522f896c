#include "moe/moe_params.h"

namespace moehub {

void declare_model_params(ParamRegistry& r) {
  r.string("model.name", "Model name as published");
  r.integer("model.layers", "Transformer layers (each with attention and an MoE or dense FFN)").at_least(1);
  r.integer("model.hidden", "Hidden size H of the token activations").at_least(1).in_unit("elements");
  r.integer("model.ffn_hidden", "Expert FFN hidden size F").at_least(1).in_unit("elements");
  r.integer("model.experts", "Routed experts per MoE layer").at_least(1);
  r.integer("model.top_k", "Routed experts chosen per token").at_least(1);
  r.boolean("model.gated", "Gated activation (SwiGLU): GEMM1 produces gate and up halves, F1 = 2F");
  r.integer("model.shared_experts", "Always-active shared experts per MoE layer").at_least(0);
  r.integer("model.shared_ffn_hidden", "FFN hidden size of one shared expert (0 when none)").at_least(0).in_unit("elements");
  r.integer("model.dense_layers", "Leading layers with a dense FFN instead of MoE").at_least(0);
  r.integer("model.dense_ffn_hidden", "FFN hidden size of the dense layers (0 when none)").at_least(0).in_unit("elements");
  r.integer("model.attn_heads", "Attention query heads").at_least(1);
  r.integer("model.kv_heads", "Attention key/value heads (GQA)").at_least(1);
  r.integer("model.head_dim", "Attention head dimension").at_least(1).in_unit("elements");
  r.choice("model.dtype", {"bf16", "fp16", "fp32"}, "Activation and weight data type");
}

void declare_workload_params(ParamRegistry& r) {
  r.real("workload.imbalance_std", "Requested std of the per-expert token fraction (0 = uniform)")
      .at_least(0)
      .at_most(1)
      .in_unit("fraction");
  r.string("workload.routing_trace", "Routing trace file (CSV or JSONL); empty for synthetic routing");
}

}  // namespace moehub
