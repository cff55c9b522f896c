#include "moe/gating.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace moehub {
namespace {

// Indices of the `count` largest values (largest first; ties: lower index first).
std::vector<int64_t> top_indices(const std::vector<float>& v, int64_t count) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + count, idx.end(), [&](int64_t a, int64_t b) {
    return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)] ||
           (v[static_cast<size_t>(a)] == v[static_cast<size_t>(b)] && a < b);
  });
  idx.resize(static_cast<size_t>(count));
  return idx;
}

}  // namespace

void route_token(const RouterSpec& spec, const float* logits, int32_t* experts_out, float* weights_out) {
  const size_t n = static_cast<size_t>(spec.experts);
  std::vector<float> scores(n);
  if (spec.score == ScoreFunction::Softmax) {
    const float peak = *std::max_element(logits, logits + n);
    float sum = 0;
    for (size_t e = 0; e < n; ++e) sum += (scores[e] = std::exp(logits[e] - peak));
    for (float& s : scores) s /= sum;
  } else {
    for (size_t e = 0; e < n; ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }

  // Group-limited routing: keep only the experts of the best `topk_groups` groups.
  std::vector<float> eligible = scores;
  if (spec.groups > 1) {
    const int64_t per_group = spec.experts / spec.groups;
    std::vector<float> group_score(static_cast<size_t>(spec.groups));
    for (int64_t g = 0; g < spec.groups; ++g) {
      std::vector<float> members(scores.begin() + g * per_group, scores.begin() + (g + 1) * per_group);
      std::sort(members.begin(), members.end(), std::greater<float>());
      group_score[static_cast<size_t>(g)] =
          spec.group_score == GroupScore::Max ? members[0] : members[0] + (members.size() > 1 ? members[1] : 0.0f);
    }
    const std::vector<int64_t> keep = top_indices(group_score, spec.topk_groups);
    for (int64_t g = 0; g < spec.groups; ++g) {
      if (std::find(keep.begin(), keep.end(), g) != keep.end()) continue;
      for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e) {
        eligible[static_cast<size_t>(e)] = -std::numeric_limits<float>::infinity();
      }
    }
  }

  const std::vector<int64_t> top = top_indices(eligible, spec.top_k);
  float sum = 0;
  for (int64_t e : top) sum += scores[static_cast<size_t>(e)];
  for (int64_t j = 0; j < spec.top_k; ++j) {
    const int64_t e = top[static_cast<size_t>(j)];
    float w = scores[static_cast<size_t>(e)];
    if (spec.norm_topk) w /= sum;
    experts_out[j] = static_cast<int32_t>(e);
    weights_out[j] = w * static_cast<float>(spec.routed_scaling);
  }
}

Routing gate_tokens(const RouterSpec& spec, const std::vector<float>& x, int64_t tokens, int64_t hidden,
                    const std::vector<float>& w_gate) {
  if (x.size() != static_cast<size_t>(tokens * hidden) || w_gate.size() != static_cast<size_t>(hidden * spec.experts)) {
    throw std::logic_error("gate_tokens: input sizes do not match the shape");
  }
  Routing routing(tokens, spec.experts, spec.top_k);
  std::vector<float> logits(static_cast<size_t>(spec.experts));
  std::vector<int32_t> ids(static_cast<size_t>(spec.top_k));
  std::vector<float> weights(static_cast<size_t>(spec.top_k));
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const float* row = x.data() + t * hidden;
    for (int64_t h = 0; h < hidden; ++h) {
      const float* wrow = w_gate.data() + h * spec.experts;
      for (int64_t e = 0; e < spec.experts; ++e) logits[static_cast<size_t>(e)] += row[h] * wrow[e];
    }
    route_token(spec, logits.data(), ids.data(), weights.data());
    for (int64_t j = 0; j < spec.top_k; ++j) routing.set(t, j, ids[static_cast<size_t>(j)], weights[static_cast<size_t>(j)]);
  }
  return routing;
}

}  // namespace moehub
