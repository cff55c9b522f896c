#include "systems/fastermoe/fastermoe_functional.h"

#include <fmt/format.h>

namespace moehub {
namespace {

// sorted: T*k rows in expert order (index_select by pos); gin, act, ytmp, gout: global input,
// GEMM1 (+act), GEMM2 output, global output (global_ptr layout); outbuf: the combined rows in
// sorted order; gathered: (token, slot) order.
struct FasterMoeBuffers {
  RowBuffer sorted, gin, act, ytmp, gout, outbuf, gathered;
  std::vector<int64_t> pos;         // sorted index -> token * k + slot
  std::vector<int64_t> expert_off;  // sorted offset of each global expert
};

class FasterMoeRows final : public FasterMoeFunctional {
 public:
  FasterMoeRows(FunctionalData& fd, Cluster& cluster, const FasterMoeLayout& layout)
      : fd_(fd), c_(cluster), w_(cluster.workload()), layout_(layout) {
    const int64_t h = fd.hidden(), f = fd.ffn(), k = w_.routing().top_k(), e = w_.model().experts();
    for (int g = 0; g < cluster.gpus(); ++g) {
      const int64_t tk = w_.tokens().count(g) * k, in = layout.rows_in(g);
      FasterMoeBuffers b{RowBuffer(fmt::format("fastermoe gpu{} sorted", g), tk, h),
                         RowBuffer(fmt::format("fastermoe gpu{} global input", g), in, h),
                         RowBuffer(fmt::format("fastermoe gpu{} activation", g), in, f),
                         RowBuffer(fmt::format("fastermoe gpu{} expert output", g), in, h),
                         RowBuffer(fmt::format("fastermoe gpu{} global output", g), in, h),
                         RowBuffer(fmt::format("fastermoe gpu{} output", g), tk, h),
                         RowBuffer(fmt::format("fastermoe gpu{} gathered", g), tk, h),
                         {}, {}};
      // assign_pos: rows by global expert id, each expert's rows in (token, slot) order.
      for (int64_t ex = 0; ex < e; ++ex) {
        b.expert_off.push_back(static_cast<int64_t>(b.pos.size()));
        for (const RowRef& r : w_.plan().expert_rows(ex)) {
          if (w_.tokens().gpu_of_token(r.token) == g) b.pos.push_back(r.token * k + r.slot);
        }
      }
      bufs_.push_back(std::move(b));
    }
  }

  void local_scatter(int g) override {
    FasterMoeBuffers& b = bufs_[g];
    const int64_t k = w_.routing().top_k();
    for (size_t i = 0; i < b.pos.size(); ++i) b.sorted.write(static_cast<int64_t>(i), fd_.input_row(b.pos[i] / k));
  }

  // Dispatch: src's rows for dst's expert ei -> dst's global input at global_ptr(dst, ei, src).
  // Combine: those rows' outputs from src (the expert GPU) back to dst's output buffer.
  void exchange(int src, int dst, int ei, bool delivered, bool combine) override {
    const int expert_gpu = combine ? src : dst, token_gpu = combine ? dst : src;
    const int64_t count = layout_.rows(token_gpu, expert_gpu, ei);
    const int64_t gbase = layout_.global_ptr(expert_gpu, ei, token_gpu);
    FasterMoeBuffers& tb = bufs_[token_gpu];
    FasterMoeBuffers& eb = bufs_[expert_gpu];
    const int64_t sbase = tb.expert_off[static_cast<size_t>(layout_.expert_of(expert_gpu, ei))];
    const RowBuffer& from = combine ? eb.gout : tb.sorted;
    RowBuffer& to = combine ? tb.outbuf : eb.gin;
    const int64_t from_first = combine ? gbase : sbase, to_first = combine ? sbase : gbase;
    transfer_rows(fd_, delivered, from, [&](int64_t r) { return from_first + r; }, to, [&](int64_t r) { return to_first + r; },
                  count);
  }

  // GEMM tiles compute their row block (tile column 0 stands for the row) when dispatched.
  gpu::GemmHooks gemm_hooks(int g, int ei, int64_t base, bool first) override {
    return tile_row_hooks([this, g, ei, base, first](const gpu::GemmTile& tile) {
      FasterMoeBuffers& b = bufs_[g];
      const int64_t r0 = base + static_cast<int64_t>(tile.tile_row * c_.gpu_config().gemm_tile.m);
      expert_rows(fd_, first ? ExpertGemm::First : ExpertGemm::Second, layout_.expert_of(g, ei), first ? b.gin : b.act,
                  first ? b.act : b.ytmp, r0, static_cast<int64_t>(tile.rows));
    });
  }

  void output_copy(int g, int64_t base, int64_t count) override { copy_rows(fd_, bufs_[g].ytmp, base, bufs_[g].gout, base, count); }

  void local_gather(int g) override {
    FasterMoeBuffers& b = bufs_[g];
    const int64_t first = w_.tokens().begin(g) * w_.routing().top_k();
    move_rows(fd_, b.outbuf, [](int64_t i) { return i; }, b.gathered,
              [&](int64_t i) { return b.pos[static_cast<size_t>(i)] - first; }, static_cast<int64_t>(b.pos.size()));
  }

  void scaling(int g) override {
    FasterMoeBuffers& b = bufs_[g];
    const int64_t k = w_.routing().top_k();
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      fd_.combine_token(t, [&](int64_t j) { return b.gathered.read((t - w_.tokens().begin(g)) * k + j, fd_); });
    }
  }

 private:
  FunctionalData& fd_;
  Cluster& c_;
  const Workload& w_;
  const FasterMoeLayout& layout_;
  PerGpu<FasterMoeBuffers> bufs_;
};

}  // namespace

std::unique_ptr<FasterMoeFunctional> FasterMoeFunctional::make(Cluster& cluster, const FasterMoeLayout& layout) {
  return make_functional_companion<FasterMoeFunctional, FasterMoeRows>(cluster.functional(), cluster, layout);
}

}  // namespace moehub
