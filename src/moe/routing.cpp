#include "moe/routing.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

Routing::Routing(int64_t tokens, int64_t experts, int64_t top_k)
    : tokens_(tokens), experts_(experts), top_k_(top_k) {
  if (tokens < 0 || experts < 1 || top_k < 1 || top_k > experts) {
    throw std::logic_error(fmt::format("Routing({}, {}, {}): bad shape", tokens, experts, top_k));
  }
  expert_ids_.assign(static_cast<size_t>(tokens * top_k), -1);
  weights_.assign(static_cast<size_t>(tokens * top_k), 0.0f);
}

size_t Routing::index(int64_t token, int64_t slot) const {
  if (token < 0 || token >= tokens_ || slot < 0 || slot >= top_k_) {
    throw std::logic_error(fmt::format("Routing: token {} slot {} out of range", token, slot));
  }
  return static_cast<size_t>(token * top_k_ + slot);
}

void Routing::set(int64_t token, int64_t slot, int32_t expert, float weight) {
  if (expert < 0 || expert >= experts_) throw std::logic_error(fmt::format("Routing: expert {} out of range", expert));
  const size_t i = index(token, slot);
  expert_ids_[i] = expert;
  weights_[i] = weight;
}

std::vector<int64_t> Routing::tokens_per_expert() const {
  std::vector<int64_t> counts(static_cast<size_t>(experts_), 0);
  for (int32_t e : expert_ids_) {
    if (e >= 0) ++counts[static_cast<size_t>(e)];
  }
  return counts;
}

void Routing::check_complete() const {
  for (int64_t t = 0; t < tokens_; ++t) {
    for (int64_t j = 0; j < top_k_; ++j) {
      const int32_t e = expert(t, j);
      if (e < 0) throw std::logic_error(fmt::format("Routing: token {} slot {} unset", t, j));
      for (int64_t i = 0; i < j; ++i) {
        if (expert(t, i) == e) throw std::logic_error(fmt::format("Routing: token {} repeats expert {}", t, e));
      }
    }
  }
}

double load_std(const std::vector<int64_t>& rows_per_expert) {
  if (rows_per_expert.empty()) return 0.0;
  int64_t total = 0;
  for (int64_t c : rows_per_expert) total += c;
  if (total == 0) return 0.0;
  const double n = static_cast<double>(rows_per_expert.size());
  const double mean = 1.0 / n;
  double sum_sq = 0;
  for (int64_t c : rows_per_expert) {
    const double d = static_cast<double>(c) / static_cast<double>(total) - mean;
    sum_sq += d * d;
  }
  return std::sqrt(sum_sq / n);
}

}  // namespace moehub
