#pragma once
// FLOPs and bytes of the parts of a transformer layer that every MoE system runs alike (paper
// VI-A): attention with its projections, the shared experts and the dense FFN of leading dense
// layers, for the T tokens of one GPU. The GPU and systems layers turn them into time with
// their own throughput and efficiency parameters; nothing here depends on hardware.
//
// Assumptions (docs/workload.md): the attention sequence is the GPU's T tokens (paper Fig. 12:
// M = SeqLength x NGPU), causal, so T(T+1)/2 query-key pairs per head; FLOPs count the matrix
// products only (2 per multiply-add; softmax, norms and RoPE are left out); bytes are the
// compulsory traffic: every weight, input and output read or written once (a fused
// FlashAttention-style kernel for the attention core; QKV projections as one GEMM).

#include <cstdint>
#include <nlohmann/json.hpp>

#include "moe/model_shape.h"

namespace moehub {

struct OpCost {
  uint64_t flops = 0;
  uint64_t bytes = 0;
  OpCost& operator+=(const OpCost& o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
  nlohmann::json to_json() const { return {{"flops", flops}, {"bytes", bytes}}; }
};

struct AttentionCost {
  int64_t tokens = 0;           // tokens on the GPU, also the sequence length
  OpCost qkv_projection;        // x -> Q, K, V (through the low-rank stage when q/kv_lora_rank > 0)
  OpCost attention;             // QK^T and PV (causal)
  OpCost output_projection;     // O -> hidden
  OpCost total() const;
  nlohmann::json to_json() const;
};

AttentionCost attention_cost(const ModelShape& model, int64_t tokens);
// All shared experts of one MoE layer on `tokens` tokens (zero when the model has none).
OpCost shared_expert_cost(const ModelShape& model, int64_t tokens);
// The dense FFN of one leading dense layer (zero when the model has none).
OpCost dense_ffn_cost(const ModelShape& model, int64_t tokens);

}  // namespace moehub
