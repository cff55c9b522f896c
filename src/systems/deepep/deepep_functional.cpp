#include "systems/deepep/deepep_functional.h"

namespace moehub {
namespace {

struct DeepEpBuffers {
  RowBuffer x, recv_x, permuted, act, y, local_sum;
  std::vector<float> out;  // the layer output of the GPU's tokens, summed as combine chunks land
};

class DeepEpRows final : public DeepEpFunctional {
 public:
  DeepEpRows(FunctionalData& fd, Cluster& cluster, const DeepEpPlan& plan, const PerGpu<DeepEpExpertRows>& experts)
      : fd_(fd), w_(cluster.workload()), plan_(plan), experts_(experts) {
    const int64_t h = fd.hidden(), f = fd.ffn();
    for (int g = 0; g < experts.size(); ++g) {
      const int64_t ru = static_cast<int64_t>(plan.recv_token[g].size());
      const int64_t rows = static_cast<int64_t>(experts[g].from.size());
      bufs_.push_back(DeepEpBuffers{RowBuffer("x", w_.tokens().count(g), h), RowBuffer("recv_x", ru, h),
                                    RowBuffer("permuted_tokens", rows, h), RowBuffer("fc1_activation", rows, f),
                                    RowBuffer("expert_output", rows, h), RowBuffer("unpermuted_output", ru, h),
                                    std::vector<float>(static_cast<size_t>(w_.tokens().count(g) * h), 0.0f)});
      // unpermute adds each received token's rows in permuted order.
      std::vector<std::vector<int64_t>> of_recv(static_cast<size_t>(ru));
      for (size_t j = 0; j < experts[g].from.size(); ++j) of_recv[static_cast<size_t>(experts[g].from[j])].push_back(static_cast<int64_t>(j));
      rows_of_recv_.push_back(std::move(of_recv));
    }
  }

  void input(int g) override { load_input_rows(fd_, w_.tokens().begin(g), w_.tokens().count(g), bufs_[g].x); }

  // Into recv_x at rank_prefix + channel_prefix + index.
  void dispatch_chunk(int g, int c, int src, int64_t first, int64_t count) override {
    const std::vector<int64_t>& toks = plan_.send(src, g)[static_cast<size_t>(c)];
    const int64_t base = plan_.recv_first(g, src)[static_cast<size_t>(c)];
    const int64_t src_begin = w_.tokens().begin(src);
    move_rows(fd_, bufs_[src].x, [&](int64_t i) { return toks[static_cast<size_t>(first + i)] - src_begin; }, bufs_[g].recv_x,
              [&](int64_t i) { return base + first + i; }, count);
  }

  void permute(int g) override { gather_rows(fd_, bufs_[g].recv_x, experts_[g].from, bufs_[g].permuted); }
  void gemm1(int g) override { experts(g, ExpertGemm::First, bufs_[g].permuted, bufs_[g].act); }
  void activation(int g) override {
    const std::vector<float>& prob = experts_[g].prob;
    scale_rows(fd_, bufs_[g].act, [&](int64_t j) { return prob[static_cast<size_t>(j)]; });
  }
  void gemm2(int g) override { experts(g, ExpertGemm::Second, bufs_[g].act, bufs_[g].y); }

  // zeros + scatter_add back to recv_x order: a plain sum of each received token's rows.
  void unpermute(int g) override {
    DeepEpBuffers& b = bufs_[g];
    std::vector<float> sum(static_cast<size_t>(fd_.hidden()));
    const std::vector<std::vector<int64_t>>& rows = rows_of_recv_[g];
    for (size_t u = 0; u < rows.size(); ++u) {
      const std::vector<int64_t>& mine = rows[u];
      sum_rows(sum, mine.size(), [&](size_t j) { return b.y.read(mine[j], fd_); });
      b.local_sum.write(static_cast<int64_t>(u), sum.data());
    }
  }

  // Read from src's recv_x-ordered sums, reduced into the token's output row.
  void combine_chunk(int g, int c, int src, int64_t first, int64_t count) override {
    const std::vector<int64_t>& toks = plan_.send(g, src)[static_cast<size_t>(c)];
    const int64_t base = plan_.recv_first(src, g)[static_cast<size_t>(c)];
    const int64_t h = fd_.hidden(), begin = w_.tokens().begin(g);
    std::vector<float>& out = bufs_[g].out;
    for (int64_t i = first; i < first + count; ++i) {
      const float* row = bufs_[src].local_sum.read(base + i, fd_);
      add_row(std::span<float>(out.data() + (toks[static_cast<size_t>(i)] - begin) * h, static_cast<size_t>(h)), row);
    }
  }

  void output(int g) override {
    for (int64_t t = 0; t < w_.tokens().count(g); ++t) {
      fd_.set_output_row(w_.tokens().begin(g) + t, bufs_[g].out.data() + t * fd_.hidden());
    }
  }

 private:
  // The permuted rows are expert-major, in the order of the GPU's local experts.
  void experts(int g, ExpertGemm gemm, const RowBuffer& from, RowBuffer& to) {
    expert_runs(fd_, gemm, w_.placement().local_experts(g), experts_[g].per_expert, from, to);
  }

  FunctionalData& fd_;
  const Workload& w_;
  const DeepEpPlan& plan_;
  const PerGpu<DeepEpExpertRows>& experts_;
  PerGpu<DeepEpBuffers> bufs_;
  PerGpu<std::vector<std::vector<int64_t>>> rows_of_recv_;  // per recv_x row: its permuted rows
};

}  // namespace

std::unique_ptr<DeepEpFunctional> DeepEpFunctional::make(Cluster& cluster, const DeepEpPlan& plan,
                                                         const PerGpu<DeepEpExpertRows>& experts) {
  return make_functional_companion<DeepEpFunctional, DeepEpRows>(cluster.functional(), cluster, plan, experts);
}

}  // namespace moehub
