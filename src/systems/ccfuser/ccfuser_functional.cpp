#include "systems/ccfuser/ccfuser_functional.h"

#include <fmt/format.h>
#include <unordered_map>

namespace moehub {
namespace {

// Symmetric input, fetched rows, ffn1 out, expert outputs by (token, slot); GEMM2's results
// of each block, from the math to their arrival at the source.
struct CcfuserBuffers {
  RowBuffer inp, merged, act, out;
  std::unordered_map<uint64_t, std::vector<std::vector<float>>> results_in_flight;  // by block code
};

class CcfuserRows final : public CcfuserFunctional {
 public:
  CcfuserRows(FunctionalData& fd, Cluster& cluster, const CcfuserPlan& plan, const CcfuserParams& params)
      : fd_(fd), w_(cluster.workload()), plan_(plan), block_rows_(params.block_rows) {
    const int64_t k = w_.routing().top_k();
    for (int g = 0; g < cluster.gpus(); ++g) {
      const int64_t slots = static_cast<int64_t>(plan.gpu(g).blocks.size()) * block_rows_;
      bufs_.push_back(CcfuserBuffers{RowBuffer(fmt::format("ccfuser moe_inp gpu{}", g), w_.tokens().count(g) * k, fd.hidden()),
                                     RowBuffer(fmt::format("ccfuser merged_input gpu{}", g), slots, fd.hidden()),
                                     RowBuffer(fmt::format("ccfuser ffn1_out gpu{}", g), slots, fd.ffn()),
                                     RowBuffer(fmt::format("ccfuser expert out gpu{}", g), w_.tokens().count(g) * k, fd.hidden()),
                                     {}});
    }
  }

  void scatter(int g) override {
    load_input_rows(fd_, w_.tokens().begin(g), w_.tokens().count(g), bufs_[g].inp, w_.routing().top_k());
  }

  void fetched(int g, uint32_t block) override {
    const CcfuserBlock& blk = plan_.gpu(g).blocks[block];
    move_rows(fd_, bufs_[blk.source].inp, [&](int64_t i) { return source_row(blk.source, blk.rows[static_cast<size_t>(i)]); },
              bufs_[g].merged, [&](int64_t i) { return first_slot_row(blk) + i; }, static_cast<int64_t>(blk.rows.size()));
  }

  // Column tile 0 stands for the block's rows.
  void math(int g, int which, const CcfuserItem& it) override {
    if (it.col != 0) return;
    CcfuserBuffers& s = bufs_[g];
    const CcfuserBlock& blk = plan_.gpu(g).blocks[it.block];
    const int64_t base = first_slot_row(blk);
    if (which == 1) {
      std::vector<float> act(static_cast<size_t>(fd_.ffn()));
      for (size_t i = 0; i < blk.rows.size(); ++i) {
        const int64_t r = static_cast<int64_t>(i);
        const float* x = blk.remote ? s.merged.read(base + r, fd_) : s.inp.read(source_row(g, blk.rows[i]), fd_);
        expert_row(fd_, ExpertGemm::First, blk.expert, x, act.data());
        s.act.write(base + r, act.data());
      }
      return;
    }
    std::vector<std::vector<float>> ys(blk.rows.size(), std::vector<float>(static_cast<size_t>(fd_.hidden())));
    for (size_t i = 0; i < blk.rows.size(); ++i) {
      expert_row(fd_, ExpertGemm::Second, blk.expert, s.act.read(base + static_cast<int64_t>(i), fd_), ys[i].data());
    }
    bufs_[blk.source].results_in_flight[plan_.gpu(g).code_base + it.block] = std::move(ys);
  }

  void results_landed(uint64_t code) override {
    const auto [holder, block] = plan_.block_of_code(code);
    const CcfuserBlock& blk = plan_.gpu(holder).blocks[block];
    CcfuserBuffers& s = bufs_[blk.source];
    auto it = s.results_in_flight.find(code);
    if (it == s.results_in_flight.end()) {
      fd_.fail(fmt::format("ccfuser: results of block {} on GPU {} arrived before they were computed", block, holder));
      return;
    }
    for (size_t i = 0; i < blk.rows.size(); ++i) s.out.write(source_row(blk.source, blk.rows[i]), it->second[i].data());
    s.results_in_flight.erase(it);
  }

  void outputs(int g) override {
    const RowBuffer& out = bufs_[g].out;
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      fd_.combine_token(t, [&](int64_t j) { return out.read(source_row(g, RowRef{t, static_cast<int32_t>(j)}), fd_); });
    }
  }

 private:
  // The row of (token, slot) in its source GPU's symmetric buffer (moe_inp, and the results).
  int64_t source_row(int src, const RowRef& r) const { return (r.token - w_.tokens().begin(src)) * w_.routing().top_k() + r.slot; }
  int64_t first_slot_row(const CcfuserBlock& blk) const { return static_cast<int64_t>(blk.slot) * block_rows_; }

  FunctionalData& fd_;
  const Workload& w_;
  const CcfuserPlan& plan_;
  int64_t block_rows_;
  PerGpu<CcfuserBuffers> bufs_;
};

}  // namespace

std::unique_ptr<CcfuserFunctional> CcfuserFunctional::make(Cluster& cluster, const CcfuserPlan& plan, const CcfuserParams& params) {
  return make_functional_companion<CcfuserFunctional, CcfuserRows>(cluster.functional(), cluster, plan, params);
}

}  // namespace moehub
