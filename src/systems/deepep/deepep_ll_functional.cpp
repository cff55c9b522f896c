#include "systems/deepep/deepep_ll_functional.h"

#include "platform/functional_data.h"

namespace moehub {
namespace {

struct LlBuffers {
  RowBuffer x, packed, act, y;  // packed_recv_x, its expert rows
};

class DeepEpLlRows final : public DeepEpLlFunctional {
 public:
  DeepEpLlRows(FunctionalData& fd, Cluster& cluster, const DeepEpLlPlan& plan) : fd_(fd), w_(cluster.workload()), plan_(plan) {
    const int64_t h = fd.hidden(), f = fd.ffn();
    for (int g = 0; g < plan.n; ++g) {
      int64_t rows = 0;
      for (uint64_t r : plan.per_expert[g]) rows += static_cast<int64_t>(r);
      bufs_.push_back(LlBuffers{RowBuffer("x", w_.tokens().count(g), h), RowBuffer("packed_recv_x", rows, h),
                                RowBuffer("expert_activation", rows, f), RowBuffer("expert_output", rows, h)});
    }
  }

  void input(int g) override { load_input_rows(fd_, w_.tokens().begin(g), w_.tokens().count(g), bufs_[g].x); }

  // Source src's tokens to expert le of g, in token order, into their packed rows.
  void dispatch_recv(int g, int le, int src) override {
    const int expert = g * plan_.local + le;
    const int64_t first = plan_.recv_first[g][static_cast<size_t>(le * plan_.n + src)];
    const std::vector<DeepEpLlPlan::Msg>& msgs = plan_.msgs[src];
    for (size_t m = 0; m < msgs.size(); ++m) {
      if (msgs[m].expert != expert) continue;
      bufs_[g].packed.write(first + msgs[m].index, bufs_[src].x.read(static_cast<int64_t>(m) / plan_.top_k, fd_));
    }
  }

  // The packed rows are expert-major, in the order of the GPU's local experts (DeepGEMM's masked
  // layout without the padding to num_max_dispatch_tokens_per_rank x ranks).
  void gemm1(int g) override {
    expert_runs(fd_, ExpertGemm::First, w_.placement().local_experts(g), plan_.per_expert[g], bufs_[g].packed, bufs_[g].act);
  }
  void gemm2(int g) override {
    expert_runs(fd_, ExpertGemm::Second, w_.placement().local_experts(g), plan_.per_expert[g], bufs_[g].act, bufs_[g].y);
  }

  // Slot j of the token: its expert's output row on the expert's GPU, weighted by the routing.
  void combine_token(int g, int64_t t) override {
    fd_.combine_token(w_.tokens().begin(g) + t, [&](int64_t j) {
      const DeepEpLlPlan::Msg& msg = plan_.msgs[g][static_cast<size_t>(t * plan_.top_k + j)];
      const int d = plan_.rank_of(msg.expert);
      const int64_t row = plan_.recv_first[d][static_cast<size_t>(plan_.local_of(msg.expert) * plan_.n + g)] + msg.index;
      return bufs_[d].y.read(row, fd_);
    });
  }

 private:
  FunctionalData& fd_;
  const Workload& w_;
  const DeepEpLlPlan& plan_;
  PerGpu<LlBuffers> bufs_;
};

}  // namespace

std::unique_ptr<DeepEpLlFunctional> DeepEpLlFunctional::make(Cluster& cluster, const DeepEpLlPlan& plan) {
  return make_functional_companion<DeepEpLlFunctional, DeepEpLlRows>(cluster.functional(), cluster, plan);
}

}  // namespace moehub
