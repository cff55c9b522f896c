#include "systems/deepep/deepep_internode_plan.h"

#include <algorithm>
#include <tuple>

namespace moehub {
namespace {

// Stream (s, r, c): the union of s's per-GPU lists toward node r, in token order.
DeepEpInternodePlan::Stream make_stream(const DeepEpPlan& plan, const DeepEpInternodePlan& p, int s, int r, int c) {
  std::vector<std::tuple<int64_t, int, int32_t>> all;  // token, local rank, index
  for (int l = 0; l < p.per_node; ++l) {
    const std::vector<int64_t>& toks = plan.send(s, p.gpu(r, l))[static_cast<size_t>(c)];
    for (size_t i = 0; i < toks.size(); ++i) all.emplace_back(toks[i], l, static_cast<int32_t>(i));
  }
  std::sort(all.begin(), all.end());
  DeepEpInternodePlan::Stream st;
  for (const auto& [token, l, index] : all) {
    if (st.token.empty() || st.token.back() != token) {
      st.token.push_back(token);
      st.index.resize(st.index.size() + static_cast<size_t>(p.per_node), -1);
    }
    st.index[(st.token.size() - 1) * static_cast<size_t>(p.per_node) + static_cast<size_t>(l)] = index;
  }
  return st;
}

// Relay q's forwarders in channel c: internode.cu's kRDMAAndNVLForwarder warps start at
// source node (sm_id + 1) % R (sm_id = 2c) and take the sources round robin; here each takes
// the sources' chunks in that order, one chunk of each source per round.
DeepEpInternodePlan::Forward make_forward(const DeepEpInternodePlan& p, int q, int c, int64_t chunk) {
  DeepEpInternodePlan::Forward f;
  const int r = p.node(q), lq = p.local(q);
  int64_t rounds = 0;
  for (int rs = 0; rs < p.nodes; ++rs) rounds = std::max(rounds, (p.stream(p.gpu(rs, lq), r, c).size() + chunk - 1) / chunk);
  f.items.resize(static_cast<size_t>(p.per_node));
  f.chunk_end.resize(static_cast<size_t>(p.per_node));
  for (int64_t k = 0; k < rounds; ++k) {
    for (int i = 0; i < p.nodes; ++i) {
      const int rs = (2 * c + 1 + i) % p.nodes;
      const int src = p.gpu(rs, lq);
      const DeepEpInternodePlan::Stream& st = p.stream(src, r, c);
      if (k * chunk >= st.size()) continue;
      const int64_t count = std::min(chunk, st.size() - k * chunk);
      f.chunks.push_back({rs, k * chunk, count});
      for (int l = 0; l < p.per_node; ++l) {
        for (int64_t t = k * chunk; t < k * chunk + count; ++t) {
          const int32_t idx = st.at(t, l, p.per_node);
          if (idx >= 0) f.items[static_cast<size_t>(l)].push_back({src, idx});
        }
        f.chunk_end[static_cast<size_t>(l)].push_back(static_cast<int64_t>(f.items[static_cast<size_t>(l)].size()));
      }
    }
  }
  return f;
}

}  // namespace

int64_t DeepEpInternodePlan::rdma_tokens(int s) const {
  int64_t sum = 0;
  for (int r = 0; r < nodes; ++r) {
    for (int c = 0; c < channels; ++c) sum += stream(s, r, c).size();
  }
  return sum;
}

DeepEpInternodePlan make_deepep_internode_plan(const DeepEpPlan& plan, int per_node, int64_t rdma_chunk) {
  DeepEpInternodePlan p;
  p.n = plan.n;
  p.per_node = per_node;
  p.nodes = plan.n / per_node;
  p.channels = plan.channels;
  for (int s = 0; s < p.n; ++s) {
    for (int r = 0; r < p.nodes; ++r) {
      for (int c = 0; c < p.channels; ++c) p.rdma.push_back(make_stream(plan, p, s, r, c));
    }
  }
  for (int q = 0; q < p.n; ++q) {
    for (int c = 0; c < p.channels; ++c) p.forward.push_back(make_forward(p, q, c, rdma_chunk));
  }
  return p;
}

}  // namespace moehub
