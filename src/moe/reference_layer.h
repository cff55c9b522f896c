#pragma once
// The functional ground truth: a float32 MoE layer (router, top-k, SwiGLU or plain SiLU
// experts, weighted combine) on small shapes, with deterministic weights and inputs from Rng.
// Every system's functional mode moves real rows through its modelled datapath, computes the
// experts with expert_forward(), combines, and checks its output with compare_to_reference().
//
// Tolerance (docs/workload.md): element i passes when |actual - expected| <= abs + rel*|expected|
// with abs = 1e-5 and rel = 1e-4. A system may sum a token's k weighted rows, or a GEMM's
// products, in another order; float32 rounding then differs by a few ulps per addition
// (eps = 1.2e-7; F = 128 products per dot product), far below the tolerance, while a row
// delivered to the wrong slot, a missing row or a wrong weight is orders of magnitude above it.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "moe/model_shape.h"
#include "moe/routing.h"

namespace moehub {

struct ReferenceShape {
  int64_t hidden = 64;
  int64_t ffn_hidden = 128;
  bool gated = true;
  RouterSpec router;  // experts, top_k and the router semantics

  // The model's expert count, top-k, activation and router semantics at a small hidden size.
  static ReferenceShape from_model(const ModelShape& model, int64_t hidden, int64_t ffn_hidden);
  int64_t gemm1_cols() const { return gated ? 2 * ffn_hidden : ffn_hidden; }
};

struct Tolerance {
  double abs = 1e-5;
  double rel = 1e-4;
};
inline constexpr Tolerance kReferenceTolerance{};

struct Comparison {
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements with |expected| >= tolerance.abs
  int64_t worst_index = -1;  // element with the largest excess over the tolerance (or largest error)
  int64_t violations = 0;    // elements outside the tolerance
  bool within = true;
  std::string describe() const;
};

// Element-wise check of a system's output against the reference output (same layout).
Comparison compare_to_reference(std::span<const float> expected, std::span<const float> actual,
                                Tolerance tolerance = kReferenceTolerance);

class ReferenceLayer {
 public:
  // Weights uniform in +-1/sqrt(fan_in), drawn from Rng(seed, stream per matrix).
  ReferenceLayer(const ReferenceShape& shape, uint64_t seed);

  const ReferenceShape& shape() const { return shape_; }
  // Token activations (tokens x hidden, row-major), standard normal, deterministic in seed.
  std::vector<float> make_input(int64_t tokens, uint64_t seed) const;
  // Real gating of x.
  Routing route(const std::vector<float>& x) const;
  // One expert on one row: y (hidden) = W2^T act(x W1).
  void expert_forward(int64_t expert, const float* x_row, float* y_row) const;
  // The same in two steps, as GEMM1 (+ activation) and GEMM2 kernels run it: `act_row` has
  // ffn_hidden elements. expert_forward is exactly expert_output(expert_hidden(x)).
  void expert_hidden(int64_t expert, const float* x_row, float* act_row) const;
  void expert_output(int64_t expert, const float* act_row, float* y_row) const;
  // One TP shard of the expert (tp_layout.h): FFN columns [first, first + count) of W1 (and
  // W3) and the same rows of W2; act_row has `count` elements, y_row is the shard's partial
  // output. The unsharded calls are the shard [0, ffn_hidden), with the same sums per element.
  void expert_hidden_shard(int64_t expert, int64_t first, int64_t count, const float* x_row, float* act_row) const;
  void expert_output_shard(int64_t expert, int64_t first, int64_t count, const float* act_row, float* y_row) const;
  // out[t] = sum over slots j (in slot order) of weight(t, j) * expert(t, j)(x[t]).
  std::vector<float> forward(const std::vector<float>& x, const Routing& routing) const;
  std::vector<float> forward(const std::vector<float>& x) const { return forward(x, route(x)); }

  const std::vector<float>& gate_weights() const { return gate_; }        // hidden x experts
  const std::vector<float>& w1(int64_t expert) const { return w1_.at(static_cast<size_t>(expert)); }  // hidden x F1
  const std::vector<float>& w2(int64_t expert) const { return w2_.at(static_cast<size_t>(expert)); }  // F x hidden

 private:
  ReferenceShape shape_;
  std::vector<float> gate_;
  std::vector<std::vector<float>> w1_;
  std::vector<std::vector<float>> w2_;
};

}  // namespace moehub
