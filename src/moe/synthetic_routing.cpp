#include "moe/synthetic_routing.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

#include "sim/error.h"
#include "sim/rng.h"

namespace moehub {
namespace {

// Rng streams: each random choice has its own, so changing one does not shift the others.
constexpr uint64_t kShapeStream = 0x51;
constexpr uint64_t kRemainderStream = 0x52;
constexpr uint64_t kAssignStream = 0x53;
constexpr uint64_t kWeightStream = 0x54;

constexpr int kBisectionSteps = 200;

double std_of(const std::vector<double>& p) {
  const double n = static_cast<double>(p.size());
  double sum_sq = 0;
  for (double x : p) sum_sq += (x - 1.0 / n) * (x - 1.0 / n);
  return std::sqrt(sum_sq / n);
}

// Fractions 1/E + a*z_e, clipped to [0, cap] and shifted by one constant so they sum to 1.
std::vector<double> waterfill(const std::vector<double>& z, double a, double cap) {
  const double n = static_cast<double>(z.size());
  const auto filled = [&](double shift) {
    double sum = 0;
    for (double v : z) sum += std::clamp(1.0 / n + a * v + shift, 0.0, cap);
    return sum;
  };
  double lo = -1.0, hi = 1.0;
  for (double v : z) {
    lo = std::min(lo, -(1.0 / n + a * v) - 1.0);
    hi = std::max(hi, cap - (1.0 / n + a * v) + 1.0);
  }
  for (int i = 0; i < kBisectionSteps; ++i) {
    const double mid = 0.5 * (lo + hi);
    (filled(mid) < 1.0 ? lo : hi) = mid;
  }
  std::vector<double> p(z.size());
  for (size_t e = 0; e < z.size(); ++e) p[e] = std::clamp(1.0 / n + a * z[e] + hi, 0.0, cap);
  return p;
}

// Moves single rows between experts while that brings load_std closer to the target. With
// S = sum of squared counts, load_std = sqrt((S / R^2 - 1 / E) / E), and moving one row from
// expert a to expert b changes S by 2 (c_b - c_a) + 2.
void refine(std::vector<int64_t>& c, double target, int64_t cap) {
  const size_t n = c.size();
  const double e = static_cast<double>(n);
  double r = 0, sum_sq = 0;
  for (int64_t x : c) {
    r += static_cast<double>(x);
    sum_sq += static_cast<double>(x) * static_cast<double>(x);
  }
  const auto std_for = [&](double s) { return std::sqrt(std::max(0.0, (s / (r * r) - 1.0 / e) / e)); };
  double err = std::fabs(std_for(sum_sq) - target);
  for (size_t iter = 0; iter < 8 * n && err > 0; ++iter) {
    size_t best_a = n, best_b = n;
    double best_err = err;
    for (size_t a = 0; a < n; ++a) {
      if (c[a] == 0) continue;
      for (size_t b = 0; b < n; ++b) {
        if (a == b || c[b] >= cap) continue;
        const double moved = sum_sq + 2.0 * static_cast<double>(c[b] - c[a]) + 2.0;
        const double new_err = std::fabs(std_for(moved) - target);
        if (new_err < best_err * (1 - 1e-12)) {
          best_err = new_err;
          best_a = a;
          best_b = b;
        }
      }
    }
    if (best_a == n) break;
    sum_sq += 2.0 * static_cast<double>(c[best_b] - c[best_a]) + 2.0;
    --c[best_a];
    ++c[best_b];
    err = best_err;
  }
}

}  // namespace

double max_load_std(int64_t experts, int64_t top_k) {
  if (experts < 1 || top_k < 1 || top_k > experts) throw std::logic_error("max_load_std: bad shape");
  const double e = static_cast<double>(experts);
  const double k = static_cast<double>(top_k);
  const double hot = 1.0 / k - 1.0 / e;
  return std::sqrt((k * hot * hot + (e - k) / (e * e)) / e);
}

std::vector<int64_t> synthetic_expert_loads(const SyntheticRoutingSpec& s) {
  if (s.tokens < 1 || s.experts < 1 || s.top_k < 1 || s.top_k > s.experts) {
    throw std::logic_error("synthetic_expert_loads: bad shape");
  }
  if (!(s.imbalance_std >= 0) || !std::isfinite(s.imbalance_std)) {
    throw UserError("workload.imbalance_std", "must be a finite number at least 0");
  }
  const double reachable = max_load_std(s.experts, s.top_k);
  if (s.imbalance_std > reachable * (1 - 1e-9) && s.imbalance_std > 0) {
    throw UserError("workload.imbalance_std",
                    fmt::format("{} is not reachable with {} experts and top-{}: the largest possible std is {:.4f} "
                                "(every token on the same {} experts)",
                                s.imbalance_std, s.experts, s.top_k, reachable, s.top_k));
  }
  return synthetic_expert_loads_of_shape(s, synthetic_shape(s.seed, s.experts));
}

std::vector<double> synthetic_shape(uint64_t seed, int64_t experts) {
  Rng shape_rng(seed, kShapeStream);
  std::vector<double> z(static_cast<size_t>(experts));
  for (double& v : z) v = shape_rng.normal();
  return z;
}

std::vector<int64_t> synthetic_expert_loads_of_shape(const SyntheticRoutingSpec& s, std::vector<double> z) {
  if (static_cast<int64_t>(z.size()) != s.experts) throw std::logic_error("synthetic_expert_loads: one shape value per expert");
  const size_t n = static_cast<size_t>(s.experts);
  const double cap = 1.0 / static_cast<double>(s.top_k);

  // The shape (which experts are hot), scaled until the fractions have the std.
  const double mean = std::accumulate(z.begin(), z.end(), 0.0) / static_cast<double>(n);
  for (double& v : z) v -= mean;
  double spread = 0;
  for (double v : z) spread += v * v;
  spread = std::sqrt(spread / static_cast<double>(n));
  std::vector<double> p(n, 1.0 / static_cast<double>(n));
  if (s.imbalance_std > 0 && spread > 0) {
    for (double& v : z) v /= spread;
    double lo = 0, hi = s.imbalance_std;
    while (std_of(waterfill(z, hi, cap)) < s.imbalance_std && hi < 1e9) hi *= 2;
    for (int i = 0; i < kBisectionSteps; ++i) {
      const double mid = 0.5 * (lo + hi);
      (std_of(waterfill(z, mid, cap)) < s.imbalance_std ? lo : hi) = mid;
    }
    p = waterfill(z, hi, cap);
  }

  // Integer rows: floors, then the remainder to the largest fractional parts (ties in a
  // seeded order, so no expert index is favoured).
  const int64_t rows = s.tokens * s.top_k;
  std::vector<int64_t> c(n);
  std::vector<double> frac(n);
  int64_t assigned = 0;
  for (size_t e = 0; e < n; ++e) {
    const double x = p[e] * static_cast<double>(rows);
    c[e] = std::min<int64_t>(static_cast<int64_t>(std::floor(x)), s.tokens);
    frac[e] = x - static_cast<double>(c[e]);
    assigned += c[e];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  Rng tie_rng(s.seed, kRemainderStream);
  tie_rng.shuffle(order);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t i = 0; assigned < rows; i = (i + 1) % n) {
    if (c[order[i]] < s.tokens) {
      ++c[order[i]];
      ++assigned;
    }
  }
  refine(c, s.imbalance_std, s.tokens);
  return c;
}

Routing generate_synthetic_routing(const SyntheticRoutingSpec& s) {
  std::vector<int64_t> remaining = synthetic_expert_loads(s);
  const size_t n = remaining.size();
  Routing routing(s.tokens, s.experts, s.top_k);
  Rng pick_rng(s.seed, kAssignStream);
  Rng weight_rng(s.seed, kWeightStream);
  std::vector<int32_t> chosen;
  std::vector<char> taken(n, 0);
  std::vector<double> w(static_cast<size_t>(s.top_k));
  int64_t rows_left = s.tokens * s.top_k;
  for (int64_t t = 0; t < s.tokens; ++t) {
    // Feasibility: an expert with as many rows left as tokens left must take this token.
    const int64_t tokens_left = s.tokens - t;
    chosen.clear();
    int64_t free_rows = rows_left;  // rows left on experts not yet chosen for this token
    for (size_t e = 0; e < n; ++e) {
      if (remaining[e] == tokens_left) {
        chosen.push_back(static_cast<int32_t>(e));
        taken[e] = 1;
        free_rows -= remaining[e];
      }
    }
    if (static_cast<int64_t>(chosen.size()) > s.top_k) throw std::logic_error("synthetic routing: infeasible loads");
    // The rest: drawn without replacement, each expert weighted by its rows left.
    while (static_cast<int64_t>(chosen.size()) < s.top_k) {
      if (free_rows <= 0) throw std::logic_error("synthetic routing: ran out of rows");
      int64_t pick = static_cast<int64_t>(pick_rng.below(static_cast<uint64_t>(free_rows)));
      for (size_t e = 0; e < n; ++e) {
        if (taken[e]) continue;
        if (pick < remaining[e]) {
          chosen.push_back(static_cast<int32_t>(e));
          taken[e] = 1;
          free_rows -= remaining[e];
          break;
        }
        pick -= remaining[e];
      }
    }
    for (int32_t e : chosen) taken[static_cast<size_t>(e)] = 0;
    pick_rng.shuffle(chosen);  // forced experts must not always take the first (heaviest) slots
    rows_left -= s.top_k;
    double sum = 0;
    for (double& x : w) sum += (x = weight_rng.exponential(1.0));
    std::sort(w.begin(), w.end(), std::greater<double>());
    for (int64_t j = 0; j < s.top_k; ++j) {
      const int32_t e = chosen[static_cast<size_t>(j)];
      --remaining[static_cast<size_t>(e)];
      routing.set(t, j, e, static_cast<float>(w[static_cast<size_t>(j)] / sum));
    }
  }
  return routing;
}

}  // namespace moehub
