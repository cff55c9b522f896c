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

}  // namespace moehub
