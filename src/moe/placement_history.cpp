#include "moe/placement_history.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/rng.h"

namespace moehub {

namespace {

// Past batch b's seed comes from its own stream of the run's seed, apart from the generator's.
constexpr uint64_t kPastBatchStream = 0x60;

}  // namespace

uint64_t past_batch_seed(uint64_t seed, int64_t batch) {
  if (batch < 1) throw std::logic_error("past_batch_seed: batches count from 1");
  return Rng(seed, kPastBatchStream + static_cast<uint64_t>(batch)).next_u64();
}

std::vector<double> past_batch_shape(const std::vector<double>& now, uint64_t past_seed, double correlation) {
  std::vector<double> z = synthetic_shape(past_seed, static_cast<int64_t>(now.size()));
  // Two independent unit normals blended so that the result is a unit normal again with
  // correlation `correlation` to the first.
  const double rest = std::sqrt(std::max(0.0, 1.0 - correlation * correlation));
  for (size_t e = 0; e < z.size(); ++e) z[e] = correlation * now[e] + rest * z[e];
  return z;
}

std::vector<int64_t> synthetic_history_load(const SyntheticRoutingSpec& now, int64_t window, double correlation) {
  if (window < 1) throw std::logic_error("synthetic_history_load: a window of at least one batch");
  const std::vector<double> shape = synthetic_shape(now.seed, now.experts);
  std::vector<int64_t> sum(static_cast<size_t>(now.experts), 0);
  for (int64_t b = 1; b <= window; ++b) {
    SyntheticRoutingSpec past = now;
    past.seed = past_batch_seed(now.seed, b);
    const std::vector<int64_t> load = synthetic_expert_loads_of_shape(past, past_batch_shape(shape, past.seed, correlation));
    for (size_t e = 0; e < sum.size(); ++e) sum[e] += load[e];
  }
  return sum;
}

}  // namespace moehub
