#include "systems/megatron_te/megatron_te_layout.h"

namespace moehub {

const Routing& megatron_routing(const Workload& w) { return w.tp().tp() > 1 ? w.logical_routing() : w.routing(); }

namespace {

// The dispatcher's expert of a routed row and of a GPU's local (physical) expert: under EP+TP
// a shard expert stands for its logical expert (tp_layout.h), otherwise experts are themselves.
int32_t logical_of(const Workload& w, int32_t physical) {
  return w.tp().tp() > 1 ? static_cast<int32_t>(w.tp().expert_of_shard(physical)) : physical;
}

// Rows of src's tokens that the EP all-to-all sends to dst: only within an EP group (the GPUs
// of one TP rank); the plan's shard rows from src to dst count each routed row once.
int64_t ep_rows(const Workload& w, int src, int dst) {
  const TpLayout& tp = w.tp();
  return tp.tp_rank(src) == tp.tp_rank(dst) ? w.plan().rows(src, dst) : 0;
}

int64_t recv_total(const Workload& w, int g) {
  int64_t total = 0;
  for (int s = 0; s < static_cast<int>(w.tokens().gpus()); ++s) total += ep_rows(w, s, g);
  return total;
}

}  // namespace

MegatronLayout make_megatron_layout(const Workload& w, int g) {
  const int n = static_cast<int>(w.tokens().gpus());
  const Routing& r = megatron_routing(w);
  const ExpertPlacement& p = w.placement();
  const DispatchPlan& plan = w.plan();
  const TpLayout& tp = w.tp();
  MegatronLayout l;
  // Permutation 1 is a stable argsort over the transposed routing map: rows by expert, then by
  // token. Experts are ordered by (owner GPU, local index), which is the expert id under
  // Megatron's contiguous placement, so each destination's rows are one contiguous split.
  std::vector<std::vector<RowRef>> by_expert(static_cast<size_t>(r.experts()));
  for (int64_t t = w.tokens().begin(g); t < w.tokens().end(g); ++t) {
    for (int32_t j = 0; j < r.top_k(); ++j) by_expert[static_cast<size_t>(r.expert(t, j))].push_back({t, j});
  }
  for (int d = 0; d < n; ++d) {
    l.send_off.push_back(static_cast<int64_t>(l.perm.size()));
    if (tp.tp_rank(d) == tp.tp_rank(g)) {
      for (int32_t e : p.local_experts(d)) {
        for (const RowRef& row : by_expert[static_cast<size_t>(logical_of(w, e))]) l.perm.push_back(row);
      }
    }
    l.send_rows.push_back(static_cast<int64_t>(l.perm.size()) - l.send_off[d]);
  }
  // The receive buffer is source-major (output_splits); within a source, its perm order.
  for (int s = 0; s < n; ++s) {
    l.recv_off.push_back(l.recv_total);
    l.recv_rows.push_back(ep_rows(w, s, g));
    l.recv_total += ep_rows(w, s, g);
  }
  // The gathered buffer: the TP ranks' receive buffers one after another.
  l.tp_rank = tp.tp_rank(g);
  for (int64_t q : tp.tp_group(g)) {
    l.tp_group.push_back(static_cast<int>(q));
    l.gather_off.push_back(l.gather_total);
    l.gather_rows.push_back(recv_total(w, static_cast<int>(q)));
    l.gather_total += l.gather_rows.back();
  }
  // sort_chunks_by_idxs: chunks (TP rank, src, local expert) of num_global_tokens_per_local_expert
  // rows, reordered expert-major. A TP peer's local experts are the shards of g's logical ones,
  // so the plan counts the same rows for both.
  const std::vector<int32_t>& local = p.local_experts(g);
  for (size_t li = 0; li < local.size(); ++li) {
    uint64_t rows = 0;
    for (size_t rank = 0; rank < l.tp_group.size(); ++rank) {
      const int q = l.tp_group[rank];
      const std::vector<int32_t>& peer = p.local_experts(q);
      int64_t src_first = l.gather_off[rank];
      for (int s = 0; s < n; ++s) {
        if (tp.tp_rank(s) != tp.tp_rank(q)) continue;
        int64_t first = src_first;
        for (size_t prior = 0; prior < li; ++prior) first += plan.rows_to_expert(s, peer[prior]);
        const int64_t count = plan.rows_to_expert(s, peer[li]);
        for (int64_t i = 0; i < count; ++i) l.sorted_from.push_back(first + i);
        rows += static_cast<uint64_t>(count);
        src_first += ep_rows(w, s, q);
      }
    }
    l.expert_rows.push_back(rows);
  }
  return l;
}

}  // namespace moehub
