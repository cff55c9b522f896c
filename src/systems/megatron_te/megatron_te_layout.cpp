#include "systems/megatron_te/megatron_te_layout.h"

namespace moehub {

MegatronLayout make_megatron_layout(const Workload& w, int g) {
  const int n = static_cast<int>(w.tokens().gpus());
  const Routing& r = w.routing();
  const ExpertPlacement& p = w.placement();
  const DispatchPlan& plan = w.plan();
  MegatronLayout l;
  // Permutation 1 is a stable argsort over the transposed routing map: rows by expert, then by
  // token. Experts are ordered by (owner GPU, local index), which is the expert id under
  // Megatron's contiguous placement, so each destination's rows are one contiguous split.
  std::vector<std::vector<RowRef>> by_expert(static_cast<size_t>(w.model().experts()));
  for (int64_t t = w.tokens().begin(g); t < w.tokens().end(g); ++t) {
    for (int32_t j = 0; j < r.top_k(); ++j) by_expert[static_cast<size_t>(r.expert(t, j))].push_back({t, j});
  }
  for (int d = 0; d < n; ++d) {
    l.send_off.push_back(static_cast<int64_t>(l.perm.size()));
    for (int32_t e : p.local_experts(d)) {
      for (const RowRef& row : by_expert[static_cast<size_t>(e)]) l.perm.push_back(row);
    }
    l.send_rows.push_back(static_cast<int64_t>(l.perm.size()) - l.send_off[d]);
  }
  // The receive buffer is source-major (output_splits); within a source, its perm order.
  for (int s = 0; s < n; ++s) {
    l.recv_off.push_back(l.recv_total);
    l.recv_rows.push_back(plan.rows(s, g));
    l.recv_total += plan.rows(s, g);
  }
  // sort_chunks_by_idxs: chunks (src, local expert) of num_global_tokens_per_local_expert rows,
  // reordered expert-major.
  for (int32_t e : p.local_experts(g)) {
    uint64_t rows = 0;
    for (int s = 0; s < n; ++s) {
      int64_t first = l.recv_off[s];
      for (int32_t prior : p.local_experts(g)) {
        if (prior == e) break;
        first += plan.rows_to_expert(s, prior);
      }
      for (int64_t i = 0; i < plan.rows_to_expert(s, e); ++i) l.sorted_from.push_back(first + i);
      rows += static_cast<uint64_t>(plan.rows_to_expert(s, e));
    }
    l.expert_rows.push_back(rows);
  }
  return l;
}

}  // namespace moehub
