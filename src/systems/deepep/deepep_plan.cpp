#include "systems/deepep/deepep_plan.h"

namespace moehub {

DeepEpPlan make_deepep_plan(const Workload& w, int channels) {
  DeepEpPlan p;
  p.n = static_cast<int>(w.tokens().gpus());
  p.channels = channels;
  const Routing& r = w.routing();
  p.counts.gpus = p.n;
  p.counts.channels = channels;
  p.counts.tokens.assign(static_cast<size_t>(p.n * channels * p.n), 0);
  p.send = PerPair<std::vector<std::vector<int64_t>>>(p.n, std::vector<std::vector<int64_t>>(static_cast<size_t>(channels)));
  p.lowest_rank.resize(p.n);
  for (int s = 0; s < p.n; ++s) {
    const int64_t begin = w.tokens().begin(s), count = w.tokens().count(s);
    // get_channel_task_range: ceil(T / channels) tokens per channel.
    const int64_t per = (count + channels - 1) / channels;
    for (int64_t i = 0; i < count; ++i) {
      const int c = static_cast<int>(i / per);
      PerGpu<uint8_t> in_rank(p.n, 0);
      for (int64_t j = 0; j < r.top_k(); ++j) in_rank[w.placement().gpu_of_expert(r.expert(begin + i, j))] = 1;
      int32_t lowest = -1;
      for (int d = 0; d < p.n; ++d) {
        if (!in_rank[d]) continue;
        if (lowest < 0) lowest = d;
        p.send(s, d)[static_cast<size_t>(c)].push_back(begin + i);
        ++p.counts.at(s, c, d);
      }
      p.lowest_rank[s].push_back(lowest);
    }
  }
  p.recv_first = PerPair<std::vector<int64_t>>(p.n, std::vector<int64_t>(static_cast<size_t>(channels)));
  p.recv_token.resize(p.n);
  for (int d = 0; d < p.n; ++d) {
    int64_t row = 0;
    for (int s = 0; s < p.n; ++s) {
      for (int c = 0; c < channels; ++c) {
        p.recv_first(d, s)[static_cast<size_t>(c)] = row;
        for (int64_t t : p.send(s, d)[static_cast<size_t>(c)]) {
          p.recv_token[d].push_back(t);
          ++row;
        }
      }
    }
  }
  return p;
}

DeepEpExpertRows make_deepep_expert_rows(const Workload& w, const DeepEpPlan& p, int g) {
  DeepEpExpertRows x;
  const Routing& r = w.routing();
  const auto& tokens = p.recv_token[g];
  for (int32_t e : w.placement().local_experts(g)) {
    uint64_t rows = 0;
    for (size_t u = 0; u < tokens.size(); ++u) {
      for (int32_t j = 0; j < r.top_k(); ++j) {
        if (r.expert(tokens[u], j) != e) continue;
        x.from.push_back(static_cast<int64_t>(u));
        x.prob.push_back(r.weight(tokens[u], j));
        ++rows;
      }
    }
    x.per_expert.push_back(rows);
  }
  return x;
}

}  // namespace moehub
