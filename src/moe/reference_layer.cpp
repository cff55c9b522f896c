#include "moe/reference_layer.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "moe/gating.h"
#include "sim/error.h"
#include "sim/rng.h"

namespace moehub {
namespace {

constexpr uint64_t kGateStream = 0x61;
constexpr uint64_t kInputStream = 0x71;
constexpr uint64_t kExpertStreamBase = 0x1000;  // W1 of expert e: base + 2e, W2: base + 2e + 1
// The reference is for small shapes; a full-size model would need gigabytes.
constexpr int64_t kMaxWeights = int64_t{1} << 26;

std::vector<float> uniform_matrix(int64_t rows, int64_t cols, uint64_t seed, uint64_t stream) {
  Rng rng(seed, stream);
  const double bound = 1.0 / std::sqrt(static_cast<double>(rows));  // fan_in = rows (x W layout)
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& v : m) v = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
  return m;
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

}  // namespace

ReferenceShape ReferenceShape::from_model(const ModelShape& model, int64_t hidden, int64_t ffn_hidden) {
  ReferenceShape s;
  s.hidden = hidden;
  s.ffn_hidden = ffn_hidden;
  s.gated = model.gated;
  s.router = model.router;
  return s;
}

std::string Comparison::describe() const {
  return fmt::format("max abs error {:.3g}, max rel error {:.3g}, worst element {}, {} outside tolerance: {}",
                     max_abs_error, max_rel_error, worst_index, violations, within ? "match" : "MISMATCH");
}

Comparison compare_to_reference(std::span<const float> expected, std::span<const float> actual, Tolerance tol) {
  if (expected.size() != actual.size()) {
    throw std::logic_error(fmt::format("compare_to_reference: {} expected values, {} actual", expected.size(),
                                       actual.size()));
  }
  Comparison c;
  double worst_excess = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i];
    const double a = actual[i];
    const double err = std::isfinite(a) ? std::fabs(a - e) : INFINITY;
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (std::fabs(e) >= tol.abs) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(e));
    const double excess = err - (tol.abs + tol.rel * std::fabs(e));
    if (!(excess <= 0)) ++c.violations;
    if (excess > worst_excess || c.worst_index < 0) {
      worst_excess = excess;
      c.worst_index = static_cast<int64_t>(i);
    }
  }
  c.within = c.violations == 0;
  return c;
}

ReferenceLayer::ReferenceLayer(const ReferenceShape& s, uint64_t seed) : shape_(s) {
  const int64_t e = s.router.experts;
  if (s.hidden < 1 || s.ffn_hidden < 1 || e < 1 || s.router.top_k < 1 || s.router.top_k > e) {
    throw std::logic_error("ReferenceLayer: bad shape");
  }
  if ((s.hidden * s.gemm1_cols() + s.ffn_hidden * s.hidden) * e > kMaxWeights) {
    // A user's choice (--functional with a full-size model), stated before anything runs.
    throw UserError("run.functional",
                    fmt::format("the float32 reference layer of hidden {} x ffn {} x {} experts would hold {} weights, "
                                "more than its limit of {} ({} MiB); functional runs use small shapes "
                                "(configs/experiments/verify.toml, as `moehub verify` does)",
                                s.hidden, s.ffn_hidden, e, (s.hidden * s.gemm1_cols() + s.ffn_hidden * s.hidden) * e,
                                kMaxWeights, kMaxWeights * 4 / (1024 * 1024)));
  }
  gate_ = uniform_matrix(s.hidden, e, seed, kGateStream);
  for (int64_t x = 0; x < e; ++x) {
    w1_.push_back(uniform_matrix(s.hidden, s.gemm1_cols(), seed, kExpertStreamBase + 2 * static_cast<uint64_t>(x)));
    w2_.push_back(uniform_matrix(s.ffn_hidden, s.hidden, seed, kExpertStreamBase + 2 * static_cast<uint64_t>(x) + 1));
  }
}

std::vector<float> ReferenceLayer::make_input(int64_t tokens, uint64_t seed) const {
  Rng rng(seed, kInputStream);
  std::vector<float> x(static_cast<size_t>(tokens * shape_.hidden));
  for (float& v : x) v = static_cast<float>(rng.normal());
  return x;
}

Routing ReferenceLayer::route(const std::vector<float>& x) const {
  if (x.size() % static_cast<size_t>(shape_.hidden) != 0) throw std::logic_error("ReferenceLayer::route: bad input");
  const int64_t tokens = static_cast<int64_t>(x.size()) / shape_.hidden;
  return gate_tokens(shape_.router, x, tokens, shape_.hidden, gate_);
}

void ReferenceLayer::expert_hidden(int64_t expert, const float* x, float* act) const {
  expert_hidden_shard(expert, 0, shape_.ffn_hidden, x, act);
}

void ReferenceLayer::expert_output(int64_t expert, const float* act, float* y) const {
  expert_output_shard(expert, 0, shape_.ffn_hidden, act, y);
}

void ReferenceLayer::expert_hidden_shard(int64_t expert, int64_t first, int64_t count, const float* x, float* act) const {
  const int64_t h = shape_.hidden, f = shape_.ffn_hidden, f1 = shape_.gemm1_cols();
  if (first < 0 || count < 1 || first + count > f) throw std::logic_error("ReferenceLayer: bad FFN shard");
  const std::vector<float>& w1m = w1(expert);
  // The shard's gate columns, then (gated) its up columns: each summed over i as the full GEMM does.
  const int64_t halves = shape_.gated ? 2 : 1;
  std::vector<float> mid(static_cast<size_t>(halves * count), 0.0f);
  for (int64_t i = 0; i < h; ++i) {
    const float xi = x[i];
    const float* row = w1m.data() + i * f1;
    for (int64_t half = 0; half < halves; ++half) {
      const float* cols = row + half * f + first;
      float* m = mid.data() + half * count;
      for (int64_t c = 0; c < count; ++c) m[c] += xi * cols[c];
    }
  }
  // SwiGLU: silu(gate half) * up half; plain: silu.
  for (int64_t c = 0; c < count; ++c) {
    const float g = silu(mid[static_cast<size_t>(c)]);
    act[c] = shape_.gated ? g * mid[static_cast<size_t>(count + c)] : g;
  }
}

void ReferenceLayer::expert_output_shard(int64_t expert, int64_t first, int64_t count, const float* act, float* y) const {
  const int64_t h = shape_.hidden;
  if (first < 0 || count < 1 || first + count > shape_.ffn_hidden) throw std::logic_error("ReferenceLayer: bad FFN shard");
  const std::vector<float>& w2m = w2(expert);
  for (int64_t c = 0; c < h; ++c) y[c] = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    const float ai = act[i];
    const float* row = w2m.data() + (first + i) * h;
    for (int64_t c = 0; c < h; ++c) y[c] += ai * row[c];
  }
}

void ReferenceLayer::expert_forward(int64_t expert, const float* x, float* y) const {
  std::vector<float> act(static_cast<size_t>(shape_.ffn_hidden));
  expert_hidden(expert, x, act.data());
  expert_output(expert, act.data(), y);
}

std::vector<float> ReferenceLayer::forward(const std::vector<float>& x, const Routing& routing) const {
  const int64_t h = shape_.hidden;
  if (x.size() != static_cast<size_t>(routing.tokens() * h) || routing.experts() != shape_.router.experts) {
    throw std::logic_error("ReferenceLayer::forward: input and routing do not match the shape");
  }
  std::vector<float> out(x.size(), 0.0f);
  std::vector<float> y(static_cast<size_t>(h));
  for (int64_t t = 0; t < routing.tokens(); ++t) {
    float* o = out.data() + t * h;
    for (int64_t j = 0; j < routing.top_k(); ++j) {
      expert_forward(routing.expert(t, j), x.data() + t * h, y.data());
      const float w = routing.weight(t, j);
      for (int64_t c = 0; c < h; ++c) o[c] += w * y[static_cast<size_t>(c)];
    }
  }
  return out;
}

}  // namespace moehub
