#include "systems/moehub/moehub_functional.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "systems/moehub/moehub_state.h"

namespace moehub {
namespace {

// Rows that arrive as packet slices: each is written to `rows` once all its bytes landed.
struct SliceAssembly {
  SliceAssembly(std::string name, uint64_t rows, int64_t cols)
      : landed(rows, 0), stage(rows * static_cast<uint64_t>(cols), 0.0f), done(std::move(name), static_cast<int64_t>(rows), cols) {}
  // `count` values of the row's `source` from value `first` on, `bytes` of `row_bytes`.
  void add(uint64_t row, const float* source, int64_t first, int64_t count, uint32_t bytes, uint64_t row_bytes) {
    float* staged = stage.data() + row * static_cast<uint64_t>(done.cols());
    std::copy_n(source + first, count, staged + first);
    landed[row] += bytes;
    if (landed[row] == row_bytes) done.write(static_cast<int64_t>(row), staged);
  }
  std::vector<uint32_t> landed;
  std::vector<float> stage;
  RowBuffer done;
};

struct MoeHubRegionRows {
  int64_t expert = 0;
  SliceAssembly input;              // the expert's input rows, by LocalRowID
  RowBuffer act;                    // its hidden rows
  std::vector<uint8_t> gemm1_done, gemm2_done;  // per M-tile: computed (its first N-tile does it)
};

struct MoeHubGpuRows {
  std::vector<MoeHubRegionRows> regions;  // per local expert
  std::unique_ptr<SliceAssembly> combine;  // combine slots
};

class MoeHubRows final : public MoeHubFunctional {
 public:
  MoeHubRows(FunctionalData& fd, Cluster& cluster, uint64_t capacity, uint64_t row_bytes, uint32_t bm)
      : fd_(fd), c_(cluster), row_bytes_(row_bytes), bm_(bm), payload_(static_cast<size_t>(cluster.workload().routing().rows())) {
    const Workload& w = cluster.workload();
    const uint64_t tiles_m = (capacity + bm - 1) / bm;
    for (int g = 0; g < cluster.gpus(); ++g) {
      MoeHubGpuRows h;
      for (const int32_t e : w.placement().local_experts(g)) {
        h.regions.push_back(MoeHubRegionRows{e, SliceAssembly(fmt::format("gpu{}.expert{}.input", g, e), capacity, fd.hidden()),
                                             RowBuffer(fmt::format("gpu{}.expert{}.hidden", g, e), static_cast<int64_t>(capacity), fd.ffn()),
                                             std::vector<uint8_t>(tiles_m, 0), std::vector<uint8_t>(tiles_m, 0)});
      }
      const uint64_t slots = static_cast<uint64_t>(w.tokens().count(g) * w.model().top_k());
      h.combine = std::make_unique<SliceAssembly>(fmt::format("gpu{}.combine", g), slots, fd.hidden());
      gpus_.push_back(std::move(h));
    }
  }

  // The packet's slice of the producer's row, placed at its LocalRowID.
  void row_slice(int g, size_t li, const LandedWrite& w) override {
    const int64_t eb = c_.model().dtype_bytes, k = c_.model().top_k();
    const int64_t token = static_cast<int64_t>(w.row_id) / k;
    gpus_[g].regions[li].input.add(w.local_row_id, fd_.input_row(token), static_cast<int64_t>(w.row_offset) / eb,
                                   static_cast<int64_t>(w.bytes) / eb, w.bytes, row_bytes_);
  }

  void combine_slice(int g, uint64_t slot, const LandedWrite& w) override {
    const Workload& wl = c_.workload();
    const int64_t eb = c_.model().dtype_bytes, k = c_.model().top_k();
    const int64_t row_id = (wl.tokens().begin(g) + static_cast<int64_t>(slot) / k) * k + static_cast<int64_t>(slot) % k;
    const std::vector<float>& y = payload_.at(static_cast<size_t>(row_id));
    if (y.empty()) throw std::logic_error(fmt::format("combine row {} landed before GEMM2 computed it", row_id));
    const uint64_t col = (w.address - HubAddressMap::kCombineBase) % row_bytes_;
    gpus_[g].combine->add(slot, y.data(), static_cast<int64_t>(col) / eb, static_cast<int64_t>(w.bytes) / eb, w.bytes, row_bytes_);
  }

  void gemm1(int g, size_t li, uint64_t m, uint64_t rows) override {
    MoeHubRegionRows& r = gpus_[g].regions[li];
    if (r.gemm1_done[m]) return;
    r.gemm1_done[m] = 1;
    expert_rows(fd_, ExpertGemm::First, r.expert, r.input.done, r.act, static_cast<int64_t>(m * bm_), static_cast<int64_t>(rows));
  }

  void gemm2(int g, size_t li, uint64_t m, uint64_t rows, const std::vector<int64_t>& source) override {
    MoeHubRegionRows& r = gpus_[g].regions[li];
    if (r.gemm2_done[m]) return;
    r.gemm2_done[m] = 1;
    for (uint64_t lr = m * bm_; lr < m * bm_ + rows; ++lr) {
      std::vector<float> y(static_cast<size_t>(fd_.hidden()));
      expert_row(fd_, ExpertGemm::Second, r.expert, r.act.read(static_cast<int64_t>(lr), fd_), y.data());
      if (source[lr] < 0) {
        fd_.fail(fmt::format("gpu{} expert {} row {}: metadata read before it landed", g, r.expert, lr));
        continue;
      }
      payload_.at(static_cast<size_t>(source[lr])) = std::move(y);
    }
  }

  void scaling(int g, int64_t first, int64_t last) override {
    const RowBuffer& combine = gpus_[g].combine->done;
    const int64_t k = c_.model().top_k(), begin = c_.workload().tokens().begin(g);
    for (int64_t t = first; t < last; ++t) {
      fd_.combine_token(begin + t, [&](int64_t j) { return combine.read(t * k + j, fd_); });
    }
  }

 private:
  FunctionalData& fd_;
  Cluster& c_;
  uint64_t row_bytes_;
  uint32_t bm_;
  PerGpu<MoeHubGpuRows> gpus_;
  std::vector<std::vector<float>> payload_;  // per RowID: GEMM2's output row, until it lands
};

}  // namespace

std::unique_ptr<MoeHubFunctional> MoeHubFunctional::make(Cluster& cluster, uint64_t capacity, uint64_t row_bytes, uint32_t bm) {
  return make_functional_companion<MoeHubFunctional, MoeHubRows>(cluster.functional(), cluster, capacity, row_bytes, bm);
}

}  // namespace moehub
