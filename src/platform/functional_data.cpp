#include "platform/functional_data.h"

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>

namespace moehub {

RowBuffer::RowBuffer(std::string name, int64_t rows, int64_t cols)
    : name_(std::move(name)),
      rows_(rows),
      cols_(cols),
      data_(static_cast<size_t>(rows * cols), 0.0f),
      written_(static_cast<size_t>(rows), 0) {}

void RowBuffer::write(int64_t row, const float* values) {
  if (row < 0 || row >= rows_) throw std::logic_error(fmt::format("{}: row {} out of range {}", name_, row, rows_));
  std::copy(values, values + cols_, data_.begin() + row * cols_);
  written_[static_cast<size_t>(row)] = 1;
}

const float* RowBuffer::read(int64_t row, FunctionalData& fd) const {
  if (row < 0 || row >= rows_) throw std::logic_error(fmt::format("{}: row {} out of range {}", name_, row, rows_));
  if (!written_[static_cast<size_t>(row)]) fd.fail(fmt::format("{}: row {} read before it was written", name_, row));
  return data_.data() + row * cols_;
}

FunctionalData::FunctionalData(const Workload& workload, uint64_t seed)
    // Replicas share their logical expert's weights: the reference has the E logical experts.
    : layer_(ReferenceShape::from_model(workload.logical_model(), workload.model().hidden,
                                        workload.logical_model().ffn_hidden),
             seed),
      routing_(workload.logical_routing()),
      physical_(workload.routing()),
      logical_of_(workload.replicas().logical_of),
      tp_(workload.tp().tp()),
      hidden_(workload.model().hidden),
      tokens_(workload.routing().tokens()) {
  input_ = layer_.make_input(tokens_, seed + 1);
  expected_ = layer_.forward(input_, routing_);
  output_.assign(expected_.size(), 0.0f);
  output_written_.assign(static_cast<size_t>(tokens_), 0);
  combined_.assign(static_cast<size_t>(hidden_), 0.0f);
}

void FunctionalData::set_output_row(int64_t token, const float* row) {
  std::copy(row, row + hidden_, output_.begin() + token * hidden_);
  output_written_.at(static_cast<size_t>(token)) = 1;
}

void FunctionalData::expect_dropped(int64_t token, const std::vector<int64_t>& dropped_slots) {
  std::vector<float> y(static_cast<size_t>(hidden_));
  float* out = expected_.data() + token * hidden_;
  std::fill(out, out + hidden_, 0.0f);
  for (int64_t j = 0; j < routing_.top_k(); ++j) {
    if (std::find(dropped_slots.begin(), dropped_slots.end(), j) != dropped_slots.end()) continue;
    layer_.expert_forward(routing_.expert(token, j), input_row(token), y.data());
    const float w = routing_.weight(token, j);
    for (int64_t c = 0; c < hidden_; ++c) out[c] += w * y[static_cast<size_t>(c)];
  }
  dropped_rows_ += static_cast<int64_t>(dropped_slots.size());
}

void FunctionalData::fail(std::string what) {
  ++violations_;
  if (errors_.size() < 8) errors_.push_back(std::move(what));
}

Comparison FunctionalData::compare() const { return compare_to_reference(expected_, output_); }

bool FunctionalData::passed() const {
  for (uint8_t w : output_written_) {
    if (!w) return false;
  }
  return violations_ == 0 && compare().within;
}

nlohmann::json FunctionalData::report() const {
  int64_t missing = 0;
  for (uint8_t w : output_written_) missing += w ? 0 : 1;
  const Comparison c = compare();
  return {{"passed", passed()},
          {"max_abs_error", c.max_abs_error},
          {"max_rel_error", c.max_rel_error},
          {"mismatched_elements", c.violations},
          {"tokens_without_output", missing},
          {"ordering_violations", violations_},
          {"dropped_rows", dropped_rows_},
          {"errors", errors_}};
}

void copy_rows(FunctionalData& fd, const RowBuffer& from, int64_t from_first, RowBuffer& to, int64_t to_first, int64_t count) {
  move_rows(fd, from, [&](int64_t i) { return from_first + i; }, to, [&](int64_t i) { return to_first + i; }, count);
}

void gather_rows(FunctionalData& fd, const RowBuffer& from, const std::vector<int64_t>& index, RowBuffer& to) {
  move_rows(fd, from, [&](int64_t i) { return index[static_cast<size_t>(i)]; }, to, [](int64_t i) { return i; },
            static_cast<int64_t>(index.size()));
}

void scatter_rows(FunctionalData& fd, const RowBuffer& from, const std::vector<int64_t>& index, RowBuffer& to) {
  move_rows(fd, from, [](int64_t i) { return i; }, to, [&](int64_t i) { return index[static_cast<size_t>(i)]; },
            static_cast<int64_t>(index.size()));
}

void load_input_rows(FunctionalData& fd, int64_t first_token, int64_t count, RowBuffer& to, int64_t copies) {
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t j = 0; j < copies; ++j) to.write(t * copies + j, fd.input_row(first_token + t));
  }
}

void expert_row(FunctionalData& fd, ExpertGemm gemm, int64_t expert, const float* in, float* out) {
  // A TP shard computes its FFN columns (tp_layout.h); without TP the shard is the whole FFN.
  const int64_t logical = fd.logical_expert(expert), count = fd.ffn(), first = fd.tp_rank(expert) * count;
  if (gemm == ExpertGemm::First) {
    fd.layer().expert_hidden_shard(logical, first, count, in, out);
  } else {
    fd.layer().expert_output_shard(logical, first, count, in, out);
  }
}

void expert_runs(FunctionalData& fd, ExpertGemm gemm, const std::vector<int32_t>& experts,
                 const std::vector<uint64_t>& rows_per, const RowBuffer& from, RowBuffer& to) {
  int64_t first = 0;
  for (size_t i = 0; i < experts.size(); ++i) {
    const int64_t count = static_cast<int64_t>(rows_per[i]);
    expert_rows(fd, gemm, experts[i], from, to, first, count);
    first += count;
  }
}

gpu::GemmHooks tile_row_hooks(std::function<void(const gpu::GemmTile&)> compute) {
  gpu::GemmHooks hooks;
  hooks.before = [compute = std::move(compute)](const gpu::GemmTile& tile) -> std::optional<gpu::Step> {
    if (tile.tile_col == 0) compute(tile);
    return std::nullopt;
  };
  return hooks;
}

}  // namespace moehub
