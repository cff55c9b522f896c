#pragma once
// The routing decision of one MoE layer: for every token, k distinct expert ids and k weights
// (token-major; slot j of token t is entry t*k + j). Produced by the synthetic generator, by
// real gating, or read from a trace; consumed by placement and by every system.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moehub {

class Routing {
 public:
  Routing() = default;
  // All slots start unset (expert -1, weight 0).
  Routing(int64_t tokens, int64_t experts, int64_t top_k);

  int64_t tokens() const { return tokens_; }
  int64_t experts() const { return experts_; }
  int64_t top_k() const { return top_k_; }
  int64_t rows() const { return tokens_ * top_k_; }  // routed (token, expert) rows

  int32_t expert(int64_t token, int64_t slot) const { return expert_ids_[index(token, slot)]; }
  float weight(int64_t token, int64_t slot) const { return weights_[index(token, slot)]; }
  void set(int64_t token, int64_t slot, int32_t expert, float weight);

  const std::vector<int32_t>& expert_ids() const { return expert_ids_; }
  const std::vector<float>& weights() const { return weights_; }

  // Rows routed to each expert (size experts()).
  std::vector<int64_t> tokens_per_expert() const;
  // Throws std::logic_error if a slot is unset, out of range, or a token repeats an expert.
  void check_complete() const;

 private:
  size_t index(int64_t token, int64_t slot) const;

  int64_t tokens_ = 0;
  int64_t experts_ = 0;
  int64_t top_k_ = 0;
  std::vector<int32_t> expert_ids_;
  std::vector<float> weights_;
};

// The paper's (and Comet's) imbalance metric: the population standard deviation over experts of
// (rows routed to expert e) / (all routed rows). 0 for perfectly even loads.
double load_std(const std::vector<int64_t>& rows_per_expert);

}  // namespace moehub
