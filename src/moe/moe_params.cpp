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
  r.boolean("model.shared_expert_gate", "Shared expert output scaled by a sigmoid gate (an H x 1 projection), as in Qwen-MoE");
  r.integer("model.dense_layers", "Leading layers with a dense FFN instead of MoE").at_least(0);
  r.integer("model.dense_ffn_hidden", "FFN hidden size of the dense layers (0 when none)").at_least(0).in_unit("elements");
  r.integer("model.attn_heads", "Attention query heads").at_least(1);
  r.integer("model.kv_heads", "Attention key/value heads (GQA); equal to attn_heads for MHA and MLA").at_least(1);
  r.integer("model.head_dim", "Query/key dimension per head").at_least(1).in_unit("elements");
  r.integer("model.v_head_dim", "Value dimension per head (equals head_dim except in MLA)").at_least(1).in_unit("elements");
  r.integer("model.q_lora_rank", "Low-rank query projection rank (MLA); 0 = full-rank H x heads*head_dim")
      .at_least(0)
      .in_unit("elements");
  r.integer("model.kv_lora_rank", "Low-rank key/value projection rank (MLA); 0 = full-rank per KV head")
      .at_least(0)
      .in_unit("elements");
  r.choice("model.dtype", {"bf16", "fp16", "fp32"}, "Activation and weight data type");
  // Router semantics: what the gate computes (the functional reference and real gating use them).
  r.choice("model.score_func", {"softmax", "sigmoid"}, "Router score of each expert from its logit");
  r.boolean("model.norm_topk", "Divide the k chosen scores by their sum (routing weights sum to 1)");
  r.real("model.routed_scaling", "Factor applied to the routing weights after normalisation").positive();
  r.integer("model.routing_groups", "Expert groups for group-limited routing (1 = no grouping)").at_least(1);
  r.integer("model.routing_topk_groups", "Groups a token may choose its experts from (group-limited routing)").at_least(1);
  r.choice("model.group_score", {"max", "top2_sum"},
           "Score of a group in group-limited routing: its best expert, or the sum of its best two");
}

void declare_workload_params(ParamRegistry& r) {
  r.real("workload.imbalance_std", "Requested std of the per-expert token fraction (0 = uniform)")
      .at_least(0)
      .at_most(1)
      .in_unit("fraction");
  r.string("workload.routing_trace", "Routing trace file (CSV or JSONL); empty for synthetic routing");
  r.integer("workload.trace_layer", "Layer of the routing trace to simulate").at_least(0);
  r.integer_list("workload.expert_map", "GPU of each expert (one entry per expert); empty = contiguous blocks")
      .at_least(0);
}

}  // namespace moehub
