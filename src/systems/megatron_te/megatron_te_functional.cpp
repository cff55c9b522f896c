#include "systems/megatron_te/megatron_te_functional.h"

namespace moehub {
namespace {

// GPU g's buffers of the dispatcher, named as in Megatron's code.
// Under EP+TP `gathered` holds the TP all-gather's output and `reduced` the reduce-scatter's;
// with T = 1 they are left empty (the sort reads `recv`, the combine `unsorted`).
struct MegatronBuffers {
  RowBuffer x, permuted, permuted_probs, recv, recv_probs, gathered, gathered_probs, sorted, sorted_probs, act, y, unsorted,
      reduced, back;
};

class MegatronTeRows final : public MegatronTeFunctional {
 public:
  MegatronTeRows(FunctionalData& fd, Cluster& cluster, const PerGpu<MegatronLayout>& layouts)
      : fd_(fd), w_(cluster.workload()), layouts_(layouts), tp_(cluster.workload().tp().tp() > 1) {
    const int64_t h = fd.hidden(), f = fd.ffn();
    for (int g = 0; g < layouts.size(); ++g) {
      const MegatronLayout& l = layouts[g];
      const int64_t out = static_cast<int64_t>(l.perm.size()), in = l.recv_total, all = l.gather_total;
      const int64_t tp_rows = tp_ ? all : 0, tp_in = tp_ ? in : 0;
      bufs_.push_back(MegatronBuffers{
          RowBuffer("x", w_.tokens().count(g), h), RowBuffer("permuted_tokens", out, h), RowBuffer("permuted_probs", out, 1),
          RowBuffer("global_input_tokens", in, h), RowBuffer("global_probs", in, 1),
          RowBuffer("tp_gathered_tokens", tp_rows, h), RowBuffer("tp_gathered_probs", tp_rows, 1),
          RowBuffer("sorted_tokens", all, h), RowBuffer("sorted_probs", all, 1), RowBuffer("fc1_activation", all, f),
          RowBuffer("expert_output", all, h), RowBuffer("unsorted_output", all, h), RowBuffer("tp_reduced_output", tp_in, h),
          RowBuffer("combined_tokens", out, h)});
      // unpermute adds each token's rows in perm order.
      std::vector<std::vector<int64_t>> rows(static_cast<size_t>(w_.tokens().count(g)));
      for (size_t i = 0; i < l.perm.size(); ++i) {
        rows[static_cast<size_t>(l.perm[i].token - w_.tokens().begin(g))].push_back(static_cast<int64_t>(i));
      }
      rows_of_token_.push_back(std::move(rows));
    }
  }

  void input(int g) override { load_input_rows(fd_, w_.tokens().begin(g), w_.tokens().count(g), bufs_[g].x); }

  void permute1(int g) override {
    const std::vector<RowRef>& perm = layouts_[g].perm;
    MegatronBuffers& b = bufs_[g];
    const int64_t first = w_.tokens().begin(g);
    move_rows(fd_, b.x, [&](int64_t i) { return perm[static_cast<size_t>(i)].token - first; }, b.permuted,
              [](int64_t i) { return i; }, static_cast<int64_t>(perm.size()));
    for (size_t i = 0; i < perm.size(); ++i) {
      const float p = megatron_routing(w_).weight(perm[i].token, perm[i].slot);
      b.permuted_probs.write(static_cast<int64_t>(i), &p);
    }
  }

  // Rows from s's split for d land at d's output_splits offset for s.
  void dispatch_landed(int s, int d) override { split_landed(s, d, &MegatronBuffers::permuted, &MegatronBuffers::recv); }
  void probs_landed(int s, int d) override { split_landed(s, d, &MegatronBuffers::permuted_probs, &MegatronBuffers::recv_probs); }

  // TP all-gather: src's receive buffer becomes src's block of dst's gathered buffer.
  void gather_landed(int s, int d) override { block_landed(s, d, &MegatronBuffers::recv, &MegatronBuffers::gathered); }
  void gather_probs_landed(int s, int d) override {
    block_landed(s, d, &MegatronBuffers::recv_probs, &MegatronBuffers::gathered_probs);
  }

  void sort(int g) override {
    MegatronBuffers& b = bufs_[g];
    gather_rows(fd_, tp_ ? b.gathered : b.recv, layouts_[g].sorted_from, b.sorted);
  }
  void sort_probs(int g) override {
    MegatronBuffers& b = bufs_[g];
    gather_rows(fd_, tp_ ? b.gathered_probs : b.recv_probs, layouts_[g].sorted_from, b.sorted_probs);
  }
  void gemm1(int g) override { experts(g, ExpertGemm::First, bufs_[g].sorted, bufs_[g].act); }
  // The weighted activation: each row's fc1 output scaled by its routing prob.
  void activation(int g) override {
    MegatronBuffers& b = bufs_[g];
    scale_rows(fd_, b.act, [&](int64_t j) { return *b.sorted_probs.read(j, fd_); });
  }
  void gemm2(int g) override { experts(g, ExpertGemm::Second, bufs_[g].act, bufs_[g].y); }
  void unsort(int g) override { scatter_rows(fd_, bufs_[g].y, layouts_[g].sorted_from, bufs_[g].unsorted); }

  // TP reduce-scatter: g's block of every TP rank's partial output, summed in TP rank order.
  void reduce_scattered(int g) override {
    const MegatronLayout& l = layouts_[g];
    const int64_t first = l.gather_off[static_cast<size_t>(l.tp_rank)];
    std::vector<float> out(static_cast<size_t>(fd_.hidden()));
    for (int64_t i = 0; i < l.recv_total; ++i) {
      sum_rows(out, l.tp_group.size(), [&](size_t r) { return bufs_[l.tp_group[r]].unsorted.read(first + i, fd_); });
      bufs_[g].reduced.write(i, out.data());
    }
  }

  // The combine all-to-all runs with the splits swapped: expert side s returns the rows of
  // token side d from its output_splits offset to d's input_splits offset.
  void combine_landed(int s, int d) override {
    const MegatronLayout& ls = layouts_[s];
    copy_rows(fd_, tp_ ? bufs_[s].reduced : bufs_[s].unsorted, ls.recv_off[d], bufs_[d].back, layouts_[d].send_off[s],
              ls.recv_rows[d]);
  }

  // zeros + scatter_add: a plain sum of each token's k rows (the probs were applied before fc2).
  void unpermute(int g) override {
    std::vector<float> out(static_cast<size_t>(fd_.hidden()));
    const std::vector<std::vector<int64_t>>& rows = rows_of_token_[g];
    for (size_t t = 0; t < rows.size(); ++t) {
      const std::vector<int64_t>& mine = rows[t];
      sum_rows(out, mine.size(), [&](size_t j) { return bufs_[g].back.read(mine[j], fd_); });
      fd_.set_output_row(w_.tokens().begin(g) + static_cast<int64_t>(t), out.data());
    }
  }

 private:
  void split_landed(int s, int d, RowBuffer MegatronBuffers::*from, RowBuffer MegatronBuffers::*to) {
    const MegatronLayout& ls = layouts_[s];
    copy_rows(fd_, bufs_[s].*from, ls.send_off[d], bufs_[d].*to, layouts_[d].recv_off[s], ls.send_rows[d]);
  }
  void block_landed(int s, int d, RowBuffer MegatronBuffers::*from, RowBuffer MegatronBuffers::*to) {
    const MegatronLayout& ls = layouts_[s];
    copy_rows(fd_, bufs_[s].*from, 0, bufs_[d].*to, ls.gather_off[static_cast<size_t>(ls.tp_rank)], ls.recv_total);
  }
  // The sorted rows are expert-major, in the order of the GPU's local experts.
  void experts(int g, ExpertGemm gemm, const RowBuffer& from, RowBuffer& to) {
    expert_runs(fd_, gemm, w_.placement().local_experts(g), layouts_[g].expert_rows, from, to);
  }

  FunctionalData& fd_;
  const Workload& w_;
  const PerGpu<MegatronLayout>& layouts_;
  bool tp_;  // EP+TP: the TP all-gather and reduce-scatter around the experts
  PerGpu<MegatronBuffers> bufs_;
  PerGpu<std::vector<std::vector<int64_t>>> rows_of_token_;  // per local token: its rows in perm
};

}  // namespace

std::unique_ptr<MegatronTeFunctional> MegatronTeFunctional::make(Cluster& cluster, const PerGpu<MegatronLayout>& layouts) {
  return make_functional_companion<MegatronTeFunctional, MegatronTeRows>(cluster.functional(), cluster, layouts);
}

}  // namespace moehub
