#pragma once
// Functional mode: real numbers travel with the simulated data movement. FunctionalData holds
// the small reference layer (weights, input, expected output for the workload's routing); a
// system keeps its own device buffers (RowBuffer), moves rows between them at the simulated
// times its mechanism moves them, computes expert rows when its kernels run, and writes each
// token's result. A read of a row that has not been written yet is recorded as a violation:
// it means a kernel ran before its data arrived.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gemm.h"
#include "moe/reference_layer.h"
#include "moe/workload.h"

namespace moehub {

class FunctionalData;

// out[c] += weight * row[c] for every column (weight 1 adds the row as it is, bit for bit).
inline void add_row(std::span<float> out, const float* row, float weight = 1.0f) {
  for (size_t c = 0; c < out.size(); ++c) out[c] += weight * row[c];
}

// The k-row combine: `out` (its size kept) becomes the sum over i in [0, count), in that order,
// of weight_of(i) * row_of(i); a null row (a dropped slot) adds nothing. `count` is a slot
// count (int64_t) or the size of a list of rows (size_t), and i has its type.
template <class Index, class RowOf, class WeightOf>
void sum_rows(std::vector<float>& out, Index count, RowOf&& row_of, WeightOf&& weight_of) {
  std::fill(out.begin(), out.end(), 0.0f);
  for (Index i = 0; i < count; ++i) {
    const float* y = row_of(i);
    if (y) add_row(out, y, weight_of(i));
  }
}
// The same with every weight 1: a plain sum (probs applied earlier, or partial sums).
template <class Index, class RowOf>
void sum_rows(std::vector<float>& out, Index count, RowOf&& row_of) {
  sum_rows(out, count, row_of, [](Index) { return 1.0f; });
}

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
  // FFN width of one physical expert: F, or F / T for a TP shard.
  int64_t ffn() const { return layer_.shape().ffn_hidden / tp_; }
  const float* input_row(int64_t token) const { return input_.data() + token * hidden_; }
  // The logical expert whose weights physical expert `physical` holds (itself without replicas).
  int64_t logical_expert(int64_t physical) const {
    return tp_ > 1 ? physical / tp_ : logical_of_.at(static_cast<size_t>(physical));
  }
  // The TP rank of a physical expert (0 without EP+TP).
  int64_t tp_rank(int64_t physical) const { return physical % tp_; }
  int64_t tp() const { return tp_; }

  void set_output_row(int64_t token, const float* row);
  // The scaling step every system ends with: `token`'s output row is the sum, in slot order, of
  // each slot's routing weight times its expert output row. `row_of(j)` gives slot j's row as
  // the system holds it (null for a slot the system dropped). Slots are the physical routing's
  // (under EP+TP k * T shard rows, each a partial output with its expert's weight).
  template <class RowOf>
  void combine_token(int64_t token, RowOf&& row_of) {
    sum_rows(combined_, physical_.top_k(), row_of, [&](int64_t j) { return physical_.weight(token, j); });
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
  const Routing& routing_;   // the logical routing (what the reference computes)
  const Routing& physical_;  // what the systems move (replicas or TP shards)
  std::vector<int32_t> logical_of_;
  int64_t tp_;
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

// ---- Shared steps of the systems' functional companions (each in the order the system's
// mechanism does it, so that sums add in the same order and violations name the same rows).

// Row moves between a system's buffers: to[to_row(i)] = from[from_row(i)] for i in [0, count).
template <class FromRow, class ToRow>
void move_rows(FunctionalData& fd, const RowBuffer& from, FromRow&& from_row, RowBuffer& to, ToRow&& to_row, int64_t count) {
  for (int64_t i = 0; i < count; ++i) to.write(to_row(i), from.read(from_row(i), fd));
}
// The rows of a transfer whose rows are read when it starts and written when it is delivered:
// at the start (`delivered` false) they are only read, so that a row not written yet is a
// violation then; on delivery they move.
template <class FromRow, class ToRow>
void transfer_rows(FunctionalData& fd, bool delivered, const RowBuffer& from, FromRow&& from_row, RowBuffer& to,
                   ToRow&& to_row, int64_t count) {
  if (delivered) {
    move_rows(fd, from, from_row, to, to_row, count);
  } else {
    for (int64_t i = 0; i < count; ++i) from.read(from_row(i), fd);
  }
}
// A contiguous block: rows [from_first, from_first + count) to rows from to_first on.
void copy_rows(FunctionalData& fd, const RowBuffer& from, int64_t from_first, RowBuffer& to, int64_t to_first, int64_t count);
// A gather (permute, sort): to[i] = from[index[i]].
void gather_rows(FunctionalData& fd, const RowBuffer& from, const std::vector<int64_t>& index, RowBuffer& to);
// Its inverse (unsort): to[index[i]] = from[i].
void scatter_rows(FunctionalData& fd, const RowBuffer& from, const std::vector<int64_t>& index, RowBuffer& to);
// The input rows of tokens [first_token, first_token + count) into rows 0.. of `to`, each
// `copies` times in a row (one per routed slot where a system keeps a copy per slot).
void load_input_rows(FunctionalData& fd, int64_t first_token, int64_t count, RowBuffer& to, int64_t copies = 1);

// One expert's GEMM1 (fc1 and activation: `out` is a hidden row of ffn floats) or GEMM2 (fc2:
// an output row of hidden floats) on one row.
enum class ExpertGemm { First, Second };
void expert_row(FunctionalData& fd, ExpertGemm gemm, int64_t expert, const float* in, float* out);
// The same over rows row_of(i), i in [0, count), of `from`, into the same rows of `to`.
template <class RowOf>
void expert_rows_at(FunctionalData& fd, ExpertGemm gemm, int64_t expert, const RowBuffer& from, RowBuffer& to, int64_t count,
                    RowOf&& row_of) {
  std::vector<float> out(static_cast<size_t>(to.cols()));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = row_of(i);
    expert_row(fd, gemm, expert, from.read(r, fd), out.data());
    to.write(r, out.data());
  }
}
// ... over rows [first, first + count).
inline void expert_rows(FunctionalData& fd, ExpertGemm gemm, int64_t expert, const RowBuffer& from, RowBuffer& to,
                        int64_t first, int64_t count) {
  expert_rows_at(fd, gemm, expert, from, to, count, [first](int64_t i) { return first + i; });
}
// The same over rows laid out expert-major: rows_per[i] rows of experts[i], one run after another.
void expert_runs(FunctionalData& fd, ExpertGemm gemm, const std::vector<int32_t>& experts,
                 const std::vector<uint64_t>& rows_per, const RowBuffer& from, RowBuffer& to);
// Each row of `rows` times weight_of(j) (the routing weight applied to the activation).
template <class WeightOf>
void scale_rows(FunctionalData& fd, RowBuffer& rows, WeightOf&& weight_of) {
  std::vector<float> scaled(static_cast<size_t>(rows.cols()));
  for (int64_t j = 0; j < rows.rows(); ++j) {
    const float* a = rows.read(j, fd);
    const float w = weight_of(j);
    for (size_t i = 0; i < scaled.size(); ++i) scaled[i] = a[i] * w;
    rows.write(j, scaled.data());
  }
}

// GEMM hooks under which the first tile column of each tile row runs `compute(tile)` as it is
// dispatched: a companion computes the tile row's rows there (the other columns add nothing).
gpu::GemmHooks tile_row_hooks(std::function<void(const gpu::GemmTile&)> compute);

// A system's functional companion: `Impl` (built from `fd` and `args`), which moves real rows,
// in functional runs; otherwise the do-nothing `Base`, so that the timing program calls its
// companion unconditionally.
template <class Base, class Impl, class... Args>
std::unique_ptr<Base> make_functional_companion(FunctionalData* fd, Args&&... args) {
  if (!fd) return std::make_unique<Base>();
  return std::make_unique<Impl>(*fd, std::forward<Args>(args)...);
}

}  // namespace moehub
