#include "systems/tutel/tutel_functional.h"

#include <fmt/format.h>

namespace moehub {
namespace {

// disp:  [E][capacity] encoded rows (zeros where nothing was placed)
// recv:  [src][local expert][capacity] rows received by the scatter all-to-all
// xin:   [local expert][src][capacity] after pre_expert_permute
// act, yout: GEMM1 (+activation) and GEMM2 outputs, indexed like xin
// ysend: [src][local expert][capacity] after post_expert_permute
// comb:  [E][capacity] the combined rows back at the source GPU
struct TutelBuffers {
  RowBuffer disp, recv, xin, act, yout, ysend, comb;
};

class TutelRows final : public TutelFunctional {
 public:
  TutelRows(FunctionalData& fd, Cluster& cluster, const TutelSlots& slots, int64_t chunk)
      : fd_(fd), c_(cluster), w_(cluster.workload()), slots_(slots), n_(cluster.gpus()), capacity_(slots.capacity()),
        chunk_(chunk) {
    const int64_t h = fd.hidden(), f = fd.ffn(), e = w_.model().experts();
    for (int g = 0; g < n_; ++g) {
      const int64_t local_rows = int64_t{local(g)} * n_ * capacity_;
      bufs_.push_back(TutelBuffers{RowBuffer(fmt::format("tutel gpu{} dispatch", g), e * capacity_, h),
                                   RowBuffer(fmt::format("tutel gpu{} received", g), local_rows, h),
                                   RowBuffer(fmt::format("tutel gpu{} expert input", g), local_rows, h),
                                   RowBuffer(fmt::format("tutel gpu{} activation", g), local_rows, f),
                                   RowBuffer(fmt::format("tutel gpu{} expert output", g), local_rows, h),
                                   RowBuffer(fmt::format("tutel gpu{} combine send", g), local_rows, h),
                                   RowBuffer(fmt::format("tutel gpu{} combined", g), e * capacity_, h)});
    }
    // The reference drops the same (token, slot) rows: Tutel's capacity semantics.
    for (int64_t t = 0; t < w_.routing().tokens(); ++t) {
      std::vector<int64_t> dropped;
      for (int64_t j = 0; j < w_.routing().top_k(); ++j) {
        if (slots_.dropped(t, j)) dropped.push_back(j);
      }
      if (!dropped.empty()) fd.expect_dropped(t, dropped);
    }
  }

  void zero(int g) override {
    RowBuffer& disp = bufs_[g].disp;
    const std::vector<float> zeros(static_cast<size_t>(disp.cols()), 0.0f);
    for (int64_t r = 0; r < disp.rows(); ++r) disp.write(r, zeros.data());
  }

  void encode(int g, int64_t j) override {
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      if (slots_.dropped(t, j)) continue;
      bufs_[g].disp.write(w_.routing().expert(t, j) * capacity_ + slots_.location(t, j), fd_.input_row(t));
    }
  }

  // s's rows for d's experts, slots of chunk i (the sender's buffer must be encoded).
  void scatter(int s, int d, int i, bool delivered) override {
    const auto& experts = w_.placement().local_experts(d);
    for (size_t l = 0; l < experts.size(); ++l) {
      const int64_t from = experts[l] * capacity_, to = (s * int64_t{local(d)} + static_cast<int64_t>(l)) * capacity_;
      transfer_rows(fd_, delivered, bufs_[s].disp, [&](int64_t c) { return from + chunk_slot(i, c); }, bufs_[d].recv,
                    [&](int64_t c) { return to + chunk_slot(i, c); }, chunk_);
    }
  }

  // s holds the experts; d is the source GPU the rows return to.
  void gather(int s, int d, int i, bool delivered) override {
    const auto& experts = w_.placement().local_experts(s);
    for (size_t l = 0; l < experts.size(); ++l) {
      const int64_t from = (d * int64_t{local(s)} + static_cast<int64_t>(l)) * capacity_, to = experts[l] * capacity_;
      transfer_rows(fd_, delivered, bufs_[s].ysend, [&](int64_t c) { return from + chunk_slot(i, c); }, bufs_[d].comb,
                    [&](int64_t c) { return to + chunk_slot(i, c); }, chunk_);
    }
  }

  // Chunk i's rows between the all-to-all layout [src][local expert][capacity] and the expert
  // layout [local expert][src][capacity]: before the experts (recv -> xin) and after (yout -> ysend).
  void pre_permute(int g, int i) override { permute(g, i, bufs_[g].recv, bufs_[g].xin, true); }
  void post_permute(int g, int i) override { permute(g, i, bufs_[g].yout, bufs_[g].ysend, false); }

  // The first tile column of each tile row computes that row block when it is dispatched.
  gpu::GemmHooks gemm_hooks(int g, int i, bool first) override {
    return tile_row_hooks([this, g, i, first](const gpu::GemmTile& tile) {
      TutelBuffers& b = bufs_[g];
      const int64_t expert = w_.placement().local_experts(g)[tile.group];
      const int64_t r0 = static_cast<int64_t>(tile.tile_row) * static_cast<int64_t>(c_.gpu_config().gemm_tile.m);
      const int l = static_cast<int>(tile.group);
      expert_rows_at(fd_, first ? ExpertGemm::First : ExpertGemm::Second, expert, first ? b.xin : b.act,
                     first ? b.act : b.yout, static_cast<int64_t>(tile.rows), [&](int64_t r) { return gemm_row_index(l, i, r0 + r); });
    });
  }

  // Dropped slots add 0.
  void decode(int g) override {
    const RowBuffer& comb = bufs_[g].comb;
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      fd_.combine_token(t, [&](int64_t j) -> const float* {
        if (slots_.dropped(t, j)) return nullptr;
        return comb.read(w_.routing().expert(t, j) * capacity_ + slots_.location(t, j), fd_);
      });
    }
  }

 private:
  int local(int g) const { return static_cast<int>(w_.placement().local_experts(g).size()); }
  int64_t chunk_slot(int i, int64_t c) const { return i * chunk_ + c; }
  // Row r of local expert l's GEMM rows in chunk i: source r / chunk, slot i * chunk + r % chunk.
  int64_t gemm_row_index(int l, int i, int64_t r) const {
    return (int64_t{l} * n_ + r / chunk_) * capacity_ + chunk_slot(i, r % chunk_);
  }

  void permute(int g, int i, const RowBuffer& from, RowBuffer& to, bool to_experts) {
    for (int l = 0; l < local(g); ++l) {
      for (int s = 0; s < n_; ++s) {
        const int64_t by_expert = (int64_t{l} * n_ + s) * capacity_, by_source = (int64_t{s} * local(g) + l) * capacity_;
        const int64_t src = to_experts ? by_source : by_expert, dst = to_experts ? by_expert : by_source;
        move_rows(fd_, from, [&](int64_t c) { return src + chunk_slot(i, c); }, to,
                  [&](int64_t c) { return dst + chunk_slot(i, c); }, chunk_);
      }
    }
  }

  FunctionalData& fd_;
  Cluster& c_;
  const Workload& w_;
  const TutelSlots& slots_;
  int n_;
  int64_t capacity_, chunk_;
  PerGpu<TutelBuffers> bufs_;
};

}  // namespace

std::unique_ptr<TutelFunctional> TutelFunctional::make(Cluster& cluster, const TutelSlots& slots, int64_t chunk) {
  return make_functional_companion<TutelFunctional, TutelRows>(cluster.functional(), cluster, slots, chunk);
}

}  // namespace moehub
