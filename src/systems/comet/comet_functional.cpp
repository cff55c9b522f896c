#include "systems/comet/comet_functional.h"

#include <fmt/format.h>
#include <unordered_map>

namespace moehub {
namespace {

struct CometBuffers {
  RowBuffer dispatch, act, inter, partials;
  std::unordered_map<uint64_t, std::vector<float>> partial_in_flight;  // at the sender, by owner code
};

class CometRows final : public CometFunctional {
 public:
  CometRows(FunctionalData& fd, Cluster& cluster, const CometPlan& plan)
      : fd_(fd), w_(cluster.workload()), plan_(plan), n_(cluster.gpus()) {
    for (int g = 0; g < n_; ++g) {
      const int64_t rows = static_cast<int64_t>(plan.gpu(g).rows.size());
      bufs_.push_back(CometBuffers{RowBuffer(fmt::format("comet dispatch gpu{}", g), rows, fd.hidden()),
                                   RowBuffer(fmt::format("comet act gpu{}", g), rows, fd.ffn()),
                                   RowBuffer(fmt::format("comet inter_D gpu{}", g), rows, fd.hidden()),
                                   RowBuffer(fmt::format("comet partials gpu{}", g), n_ * w_.tokens().count(g), fd.hidden()),
                                   {}});
    }
  }

  void row_in(int g, uint64_t pos) override {
    bufs_[g].dispatch.write(static_cast<int64_t>(pos), fd_.input_row(plan_.gpu(g).rows[pos].token));
  }

  // Tile column 0 stands for the tile row's rows.
  void gemm1(int g, const gpu::GemmTile& t, uint32_t tile_row) override {
    if (t.tile_col != 0) return;
    expert_tile(g, ExpertGemm::First, t, tile_row, bufs_[g].dispatch, bufs_[g].act);
  }
  void gemm2(int g, const gpu::GemmTile& t) override {
    if (t.tile_col != 0) return;
    const uint32_t tile_row = plan_.gpu(g).tile_row_base[t.group] + static_cast<uint32_t>(t.tile_row);
    expert_tile(g, ExpertGemm::Second, t, tile_row, bufs_[g].act, bufs_[g].inter);
  }

  void partial(int g, const CometCombineToken& tok, uint64_t code) override {
    std::vector<float> sum(static_cast<size_t>(fd_.hidden()));
    const RowBuffer& inter = bufs_[g].inter;
    sum_rows(sum, tok.rows.size(), [&](size_t i) { return inter.read(static_cast<int64_t>(tok.rows[i].first), fd_); },
             [&](size_t i) { return tok.rows[i].second; });
    bufs_[tok.owner].partial_in_flight[code] = std::move(sum);
  }

  void partial_in(int owner, uint64_t code) override {
    CometBuffers& s = bufs_[owner];
    const uint64_t rel = code - kCometCombineCode;
    const int64_t token = static_cast<int64_t>(rel / static_cast<uint64_t>(n_));
    const int64_t src = static_cast<int64_t>(rel % static_cast<uint64_t>(n_));
    auto it = s.partial_in_flight.find(code);
    if (it == s.partial_in_flight.end()) {
      fd_.fail(fmt::format("comet: partial of token {} from GPU {} arrived before it was computed", token, src));
      return;
    }
    s.partials.write(src * w_.tokens().count(owner) + token - w_.tokens().begin(owner), it->second.data());
    s.partial_in_flight.erase(it);
  }

  void outputs(int g) override {
    const RowBuffer& partials = bufs_[g].partials;
    const int64_t count = w_.tokens().count(g);
    std::vector<float> out(static_cast<size_t>(fd_.hidden()));
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      const std::vector<int>& sources = plan_.sources_of_token(t);
      sum_rows(out, sources.size(), [&](size_t i) { return partials.read(sources[i] * count + (t - w_.tokens().begin(g)), fd_); });
      fd_.set_output_row(t, out.data());
    }
  }

 private:
  // The tile's rows through its group's expert.
  void expert_tile(int g, ExpertGemm gemm, const gpu::GemmTile& t, uint32_t tile_row, const RowBuffer& from, RowBuffer& to) {
    const CometGpuPlan& pl = plan_.gpu(g);
    expert_rows(fd_, gemm, pl.experts[t.group], from, to, static_cast<int64_t>(pl.tile_first_row[tile_row]),
                static_cast<int64_t>(t.rows));
  }

  FunctionalData& fd_;
  const Workload& w_;
  const CometPlan& plan_;
  int n_;
  PerGpu<CometBuffers> bufs_;
};

}  // namespace

std::unique_ptr<CometFunctional> CometFunctional::make(Cluster& cluster, const CometPlan& plan) {
  return make_functional_companion<CometFunctional, CometRows>(cluster.functional(), cluster, plan);
}

}  // namespace moehub
