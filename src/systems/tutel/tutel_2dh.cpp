#include "systems/tutel/tutel_2dh.h"

#include <stdexcept>

namespace moehub {

Tutel2dhSteps tutel_2dh_steps(const std::vector<int64_t>& local_experts, int per_node, uint64_t slot_bytes) {
  const int n = static_cast<int>(local_experts.size());
  if (per_node < 1 || n % per_node != 0) throw std::logic_error("tutel_2dh_steps: GPUs not a multiple of LOCAL_SIZE");
  const int nodes = n / per_node;
  const auto e = [&](int g) { return static_cast<uint64_t>(local_experts[static_cast<size_t>(g)]); };
  Tutel2dhSteps st{PerPair<uint64_t>(n), PerPair<uint64_t>(n), PerPair<uint64_t>(n), PerPair<uint64_t>(n)};
  for (int s = 0; s < n; ++s) {
    for (int m = 0; m < nodes; ++m) {
      const int r = m * per_node + s % per_node;  // s's peer in the data group on node m
      uint64_t node_experts = 0;
      for (int d = m * per_node; d < (m + 1) * per_node; ++d) node_experts += e(d);
      st.dispatch_inter(s, r) = node_experts * slot_bytes;
      st.combine_inter(s, r) = e(s) * static_cast<uint64_t>(per_node) * slot_bytes;
    }
    for (int d = s / per_node * per_node; d < (s / per_node + 1) * per_node; ++d) {
      uint64_t rank_experts = 0;  // experts of s's local rank on every node
      for (int m = 0; m < nodes; ++m) rank_experts += e(m * per_node + s % per_node);
      st.dispatch_intra(s, d) = e(d) * static_cast<uint64_t>(nodes) * slot_bytes;
      st.combine_intra(s, d) = rank_experts * slot_bytes;
    }
  }
  return st;
}

Tutel2dhSteps tutel_2dh_extension_steps(const std::vector<int64_t>& local_experts, int per_node, uint64_t chunk_bytes) {
  const int n = static_cast<int>(local_experts.size());
  if (per_node < 1 || n % per_node != 0) throw std::logic_error("tutel_2dh_extension_steps: GPUs not a multiple of LOCAL_SIZE");
  const int nodes = n / per_node;
  const auto e = [&](int g) { return static_cast<uint64_t>(local_experts[static_cast<size_t>(g)]); };
  Tutel2dhSteps st{PerPair<uint64_t>(n), PerPair<uint64_t>(n), PerPair<uint64_t>(n), PerPair<uint64_t>(n)};
  for (int s = 0; s < n; ++s) {
    uint64_t node_experts = 0;  // experts on s's node
    for (int g = s / per_node * per_node; g < (s / per_node + 1) * per_node; ++g) node_experts += e(g);
    for (int r = s / per_node * per_node; r < (s / per_node + 1) * per_node; ++r) {
      uint64_t rank_experts = 0;  // experts of r's local rank on every node
      for (int m = 0; m < nodes; ++m) rank_experts += e(m * per_node + r % per_node);
      st.dispatch_intra(s, r) = rank_experts * chunk_bytes;
      st.combine_intra(s, r) = static_cast<uint64_t>(nodes) * e(s) * chunk_bytes;
    }
    if (nodes == 1) continue;  // the extension's one-node branch: the intra call alone, flat
    for (int m = 0; m < nodes; ++m) {
      const int d = m * per_node + s % per_node;
      st.dispatch_inter(s, d) = static_cast<uint64_t>(per_node) * e(d) * chunk_bytes;
      st.combine_inter(s, d) = node_experts * chunk_bytes;
    }
  }
  return st;
}

}  // namespace moehub
