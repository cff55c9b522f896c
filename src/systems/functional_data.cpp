#include "systems/functional_data.h"

#include <fmt/format.h>
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
    : layer_(ReferenceShape::from_model(workload.model(), workload.model().hidden, workload.model().ffn_hidden), seed),
      hidden_(workload.model().hidden),
      tokens_(workload.routing().tokens()) {
  input_ = layer_.make_input(tokens_, seed + 1);
  expected_ = layer_.forward(input_, workload.routing());
  output_.assign(expected_.size(), 0.0f);
  output_written_.assign(static_cast<size_t>(tokens_), 0);
}

void FunctionalData::set_output_row(int64_t token, const float* row) {
  std::copy(row, row + hidden_, output_.begin() + token * hidden_);
  output_written_.at(static_cast<size_t>(token)) = 1;
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
          {"errors", errors_}};
}

}  // namespace moehub
