#pragma once
// Functional mode: real numbers travel with the simulated data movement. FunctionalData holds
// the small reference layer (weights, input, expected output for the workload's routing); a
// system keeps its own device buffers (RowBuffer), moves rows between them at the simulated
// times its mechanism moves them, computes expert rows when its kernels run, and writes each
// token's result. A read of a row that has not been written yet is recorded as a violation:
// it means a kernel ran before its data arrived.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/reference_layer.h"
#include "moe/workload.h"

namespace moehub {

class FunctionalData;

// A row-major buffer in one GPU's memory, with a written flag per row.
class RowBuffer {
 public:
  RowBuffer() = default;
  RowBuffer(std::string name, int64_t rows, int64_t cols);
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  void write(int64_t row, const float* values);
  // The row's values; records a violation in `fd` if it was never written.
  const float* read(int64_t row, FunctionalData& fd) const;
  bool written(int64_t row) const { return written_.at(static_cast<size_t>(row)) != 0; }

 private:
  std::string name_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<float> data_;
  std::vector<uint8_t> written_;
};

class FunctionalData {
 public:
  // The reference layer takes the model's hidden and FFN sizes (functional runs use small
  // shapes, see configs/experiments/verify.toml) and the workload's routing.
  FunctionalData(const Workload& workload, uint64_t seed);

  const ReferenceLayer& layer() const { return layer_; }
  int64_t hidden() const { return hidden_; }
  int64_t ffn() const { return layer_.shape().ffn_hidden; }
  const float* input_row(int64_t token) const { return input_.data() + token * hidden_; }

  void set_output_row(int64_t token, const float* row);
  // The scaling step every system ends with: `token`'s output row is the sum, in slot order, of
  // each slot's routing weight times its expert output row. `row_of(j)` gives slot j's row as
  // the system holds it (null for a slot the system dropped).
  template <class RowOf>
  void combine_token(int64_t token, RowOf&& row_of) {
    combined_.assign(static_cast<size_t>(hidden_), 0.0f);
    for (int64_t j = 0; j < routing_.top_k(); ++j) {
      const float* y = row_of(j);
      if (!y) continue;
      const float w = routing_.weight(token, j);
      for (size_t c = 0; c < combined_.size(); ++c) combined_[c] += w * y[c];
    }
    set_output_row(token, combined_.data());
  }
  // For a system that drops routed rows by design (Tutel's capacity overflow): the expected
  // output of `token` becomes the reference sum over its other slots, in slot order, as if the
  // dropped (token, slot) rows contributed zero. Counted in the report as dropped_rows.
  void expect_dropped(int64_t token, const std::vector<int64_t>& dropped_slots);
  void fail(std::string what);

  bool passed() const;
  Comparison compare() const;
  nlohmann::json report() const;

 private:
  ReferenceLayer layer_;
  const Routing& routing_;
  int64_t hidden_;
  int64_t tokens_;
  std::vector<float> input_;
  std::vector<float> expected_;
  std::vector<float> output_;
  std::vector<float> combined_;  // combine_token's scratch row
  std::vector<uint8_t> output_written_;
  std::vector<std::string> errors_;
  uint64_t violations_ = 0;
  int64_t dropped_rows_ = 0;
};

}  // namespace moehub
