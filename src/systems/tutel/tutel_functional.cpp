#include "systems/tutel/tutel_functional.h"

#include <fmt/format.h>

namespace moehub {
namespace {

// disp:  [E][capacity] encoded rows (zeros where nothing was placed), E the gate's experts
// rep:   parallel_type 'model': [E * r][capacity], block p the copy of disp's block p / r
//        (y.repeat(1, r, 1) read as [N, capacity, H]; p is the shard expert of GPU p)
// recv:  [src][local expert][capacity] rows received by the scatter all-to-all
// xin:   [local expert][src][capacity] after pre_expert_permute
// act, yout: GEMM1 (+activation) and GEMM2 outputs, indexed like xin
// ysend: [src][local expert][capacity] after post_expert_permute
// comb:  [physical expert][capacity] the combined rows back at the source GPU
// sum:   'model': [E][capacity] the sum over each expert's r partial rows
// bias_in, bias: 'model': [chunk][H] the gathered fc2 bias, then scaled by 1 / r (the
//        reference layer has no biases: Tutel's would be all-gathered zeros)
struct TutelBuffers {
  RowBuffer disp, rep, recv, xin, act, yout, ysend, comb, sum, bias_in, bias;
};

class TutelRows final : public TutelFunctional {
 public:
  TutelRows(FunctionalData& fd, Cluster& cluster, const TutelSlots& slots, int64_t chunk, int64_t r)
      : fd_(fd), c_(cluster), w_(cluster.workload()), routing_(r > 1 ? w_.logical_routing() : w_.routing()),
        slots_(slots), n_(cluster.gpus()), capacity_(slots.capacity()), chunk_(chunk), r_(r) {
    const int64_t h = fd.hidden(), f = fd.ffn(), e = routing_.experts(), p = w_.model().experts();
    const int64_t shards = r > 1 ? e : 0, chunks = r > 1 ? capacity_ / chunk_ : 0;
    for (int g = 0; g < n_; ++g) {
      const int64_t local_rows = int64_t{local(g)} * n_ * capacity_;
      const auto name = [g](const char* what) { return fmt::format("tutel gpu{} {}", g, what); };
      bufs_.push_back(TutelBuffers{RowBuffer(name("dispatch"), e * capacity_, h),
                                   RowBuffer(name("repeated"), r > 1 ? p * capacity_ : 0, h),
                                   RowBuffer(name("received"), local_rows, h),
                                   RowBuffer(name("expert input"), local_rows, h),
                                   RowBuffer(name("activation"), local_rows, f),
                                   RowBuffer(name("expert output"), local_rows, h),
                                   RowBuffer(name("combine send"), local_rows, h),
                                   RowBuffer(name("combined"), p * capacity_, h),
                                   RowBuffer(name("shard sum"), shards * capacity_, h),
                                   RowBuffer(name("fc2 bias gathered"), chunks, h),
                                   RowBuffer(name("fc2 bias"), chunks, h)});
    }
    // The reference drops the same (token, slot) rows: Tutel's capacity semantics.
    for (int64_t t = 0; t < routing_.tokens(); ++t) {
      std::vector<int64_t> dropped;
      for (int64_t j = 0; j < routing_.top_k(); ++j) {
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
      bufs_[g].disp.write(routing_.expert(t, j) * capacity_ + slots_.location(t, j), fd_.input_row(t));
    }
  }

  // s's rows for d's experts, slots of chunk i (the sender's buffer must be encoded).
  void scatter(int s, int d, int i, bool delivered) override {
    const auto& experts = w_.placement().local_experts(d);
    for (size_t l = 0; l < experts.size(); ++l) {
      const int64_t from = experts[l] * capacity_, to = (s * int64_t{local(d)} + static_cast<int64_t>(l)) * capacity_;
      transfer_rows(fd_, delivered, r_ > 1 ? bufs_[s].rep : bufs_[s].disp, [&](int64_t c) { return from + chunk_slot(i, c); }, bufs_[d].recv,
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

  // Dropped slots add 0. Under 'model' each kept slot reads its expert's summed partials and
  // the gate's k slots are weighted here (fast_decode on [E, capacity, H]).
  void decode(int g) override {
    const RowBuffer& comb = r_ > 1 ? bufs_[g].sum : bufs_[g].comb;
    std::vector<float> out(static_cast<size_t>(fd_.hidden()));
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      const auto row_of = [&](int64_t j) -> const float* {
        if (slots_.dropped(t, j)) return nullptr;
        return comb.read(routing_.expert(t, j) * capacity_ + slots_.location(t, j), fd_);
      };
      if (r_ == 1) {
        fd_.combine_token(t, row_of);
        continue;
      }
      sum_rows(out, routing_.top_k(), row_of, [&](int64_t j) { return routing_.weight(t, j); });
      fd_.set_output_row(t, out.data());
    }
  }

  void repeat(int g) override {
    TutelBuffers& b = bufs_[g];
    for (int64_t p = 0; p < b.rep.rows() / capacity_; ++p) copy_rows(fd_, b.disp, p / r_ * capacity_, b.rep, p * capacity_, capacity_);
  }

  void bias_gathered(int g, int i) override {
    const std::vector<float> zeros(static_cast<size_t>(fd_.hidden()), 0.0f);
    bufs_[g].bias_in.write(i, zeros.data());
  }

  void bias_scaled(int g, int i) override {
    std::vector<float> row(static_cast<size_t>(fd_.hidden()));
    const float* in = bufs_[g].bias_in.read(i, fd_);
    for (size_t c = 0; c < row.size(); ++c) row[c] = in[c] * (1.0f / static_cast<float>(r_));
    bufs_[g].bias.write(i, row.data());
  }

  // torch.add(matmul, bias) on chunk i's GEMM2 rows.
  void fc2_bias_add(int g, int i) override {
    TutelBuffers& b = bufs_[g];
    const float* bias = b.bias.read(i, fd_);
    std::vector<float> row(static_cast<size_t>(fd_.hidden()));
    for (int l = 0; l < local(g); ++l) {
      for (int64_t r = 0; r < int64_t{n_} * chunk_; ++r) {
        const int64_t at = gemm_row_index(l, i, r);
        const float* y = b.yout.read(at, fd_);
        for (size_t c = 0; c < row.size(); ++c) row[c] = y[c] + bias[c];
        b.yout.write(at, row.data());
      }
    }
  }

  // torch.sum(y.view(E, r, -1, H), dim=1): expert e's partial rows of its r shards, in shard order.
  void sum_shards(int g) override {
    TutelBuffers& b = bufs_[g];
    std::vector<float> out(static_cast<size_t>(fd_.hidden()));
    for (int64_t row = 0; row < b.sum.rows(); ++row) {
      const int64_t e = row / capacity_, slot = row % capacity_;
      sum_rows(out, r_, [&](int64_t j) { return b.comb.read((e * r_ + j) * capacity_ + slot, fd_); });
      b.sum.write(row, out.data());
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
  const Routing& routing_;  // the gate's: logical experts under 'model', else the workload's
  const TutelSlots& slots_;
  int n_;
  int64_t capacity_, chunk_, r_;
  PerGpu<TutelBuffers> bufs_;
};

}  // namespace

std::unique_ptr<TutelFunctional> TutelFunctional::make(Cluster& cluster, const TutelSlots& slots, int64_t chunk, int64_t r) {
  return make_functional_companion<TutelFunctional, TutelRows>(cluster.functional(), cluster, slots, chunk, r);
}

}  // namespace moehub
