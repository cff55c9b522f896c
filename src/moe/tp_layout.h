#pragma once
// EP+TP hybrid parallelism (paper VII-A1) laid out as Megatron-LM's expert tensor parallelism
// does it (NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py, and token_dispatcher.py
// @60e039626 L728-794: after the EP all-to-all the received rows are all-gathered over the TP
// group with output_splits_tp): N GPUs form N / T TP groups of T consecutive GPUs; the EP rank
// of GPU g is g / T and its TP rank g % T. The E experts lie in contiguous blocks of E / EP per
// EP rank, and every expert of an EP rank is sharded over that rank's TP group: TP rank r holds
// FFN columns [r F / T, (r + 1) F / T) of W1 (and of W3 when gated: column-parallel GEMM1) and
// the same rows of W2 (row-parallel GEMM2), so that the expert's output is the sum over its T
// shards' partial outputs. Tokens stay sequence-parallel: each GPU routes its own M / N tokens.
//
// A shard is a "shard expert" of its own: shard expert s = e * T + r is expert e's TP rank r,
// on GPU ep_rank(e) * T + r. A routed (token, expert e) row becomes T shard rows, one per shard
// expert: that is MoE-Hub's view (one consumer endpoint, one MallocID, per shard).

#include <cstdint>
#include <vector>

namespace moehub {

class TpLayout {
 public:
  // Throws UserError naming parallel.tp unless tp >= 1 and, when tp > 1, tp divides gpus,
  // gpus / tp divides experts and tp divides ffn (tp == 1 checks nothing else: pure EP may
  // place experts by a map or with replicas).
  TpLayout(int64_t gpus, int64_t tp, int64_t experts, int64_t ffn);

  int64_t tp() const { return tp_; }
  int64_t ep() const { return gpus_ / tp_; }
  int64_t gpus() const { return gpus_; }
  int64_t experts() const { return experts_; }
  int64_t tp_rank(int64_t gpu) const { return gpu % tp_; }
  int64_t ep_rank(int64_t gpu) const { return gpu / tp_; }
  // The GPUs of g's TP group, ascending (T consecutive GPUs).
  std::vector<int64_t> tp_group(int64_t gpu) const;
  // The GPUs of g's EP group: one per TP group, all with g's TP rank.
  std::vector<int64_t> ep_group(int64_t gpu) const;
  int64_t ep_rank_of_expert(int64_t expert) const { return expert / (experts_ / ep()); }

  // FFN columns per shard (F / T) and where TP rank r's begin.
  int64_t shard_ffn() const { return ffn_ / tp_; }
  int64_t shard_first_column(int64_t rank) const { return rank * shard_ffn(); }

  int64_t shard_experts() const { return experts_ * tp_; }
  int64_t shard_expert(int64_t expert, int64_t rank) const { return expert * tp_ + rank; }
  int64_t expert_of_shard(int64_t shard) const { return shard / tp_; }
  int64_t rank_of_shard(int64_t shard) const { return shard % tp_; }
  int64_t gpu_of_shard(int64_t shard) const { return ep_rank_of_expert(expert_of_shard(shard)) * tp_ + rank_of_shard(shard); }
  // gpu_of_shard for every shard expert (an expert map over E * T shard experts).
  std::vector<int64_t> shard_map() const;

 private:
  int64_t gpus_, tp_, experts_, ffn_;
};

}  // namespace moehub
