#pragma once
// The shape of one model as the simulator needs it: layer counts, expert FFN sizes, router
// semantics and the attention shape, read from the `model.*` section. Helpers give the FLOPs
// and bytes that follow from the shape; no hardware enters here.

#include <cstdint>
#include <string>

#include "config/config.h"

namespace moehub {

enum class ScoreFunction { Softmax, Sigmoid };
enum class GroupScore { Max, Top2Sum };

// What the router computes for one token (real gating and the functional reference).
struct RouterSpec {
  int64_t experts = 0;
  int64_t top_k = 0;
  ScoreFunction score = ScoreFunction::Softmax;
  bool norm_topk = true;
  double routed_scaling = 1.0;
  int64_t groups = 1;        // expert groups (group-limited routing); 1 = none
  int64_t topk_groups = 1;   // groups a token may use
  GroupScore group_score = GroupScore::Max;
};

struct ModelShape {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;      // H
  int64_t ffn_hidden = 0;  // F (per routed expert)
  bool gated = true;       // SwiGLU: GEMM1 has F1 = 2F columns
  int64_t shared_experts = 0;
  int64_t shared_ffn_hidden = 0;
  bool shared_expert_gate = false;
  int64_t dense_layers = 0;
  int64_t dense_ffn_hidden = 0;
  int64_t attn_heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t q_lora_rank = 0;   // 0 = full-rank query projection
  int64_t kv_lora_rank = 0;  // 0 = full-rank key/value projection
  int64_t dtype_bytes = 2;
  RouterSpec router;

  // Reads `model.*`; throws UserError naming the key when the shape is inconsistent.
  static ModelShape from(const Config& config);
  // The same checks on a hand-built shape (UserError naming `model.<field>`).
  void validate() const;

  int64_t experts() const { return router.experts; }
  int64_t top_k() const { return router.top_k; }
  int64_t moe_layers() const { return layers - dense_layers; }
  // Columns of GEMM1 (F1): 2F when gated, F otherwise.
  int64_t gemm1_cols() const { return gated ? 2 * ffn_hidden : ffn_hidden; }

  // One routed row (a token's copy sent to one expert).
  uint64_t row_bytes() const;                 // H * dtype: dispatch and combine payload
  uint64_t gemm1_flops_per_row() const;       // 2 H F1
  uint64_t gemm2_flops_per_row() const;       // 2 F H
  uint64_t expert_flops_per_row() const;      // both GEMMs
  uint64_t expert_weight_bytes() const;       // (H F1 + F H) * dtype, one expert
  uint64_t router_flops_per_token() const;    // 2 H E (gate GEMM)
  // Shared experts (every token, on its own GPU), including the H x 1 gate when present.
  uint64_t shared_expert_flops_per_token() const;
  uint64_t shared_expert_weight_bytes() const;
  // Dense FFN of the leading dense layers (gated like the experts).
  uint64_t dense_ffn_flops_per_token() const;
};

}  // namespace moehub
