#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/synthetic_routing.h"
#include "sim/error.h"
#include "moe/routing_shapes.h"

namespace moehub {
namespace {

using test::kShapes;
using test::Shape;


TEST(SyntheticRouting, EveryExpertGetsExactlyItsLoadAndTokensHaveDistinctExperts) {
  for (const Shape& shape : kShapes) {
    const SyntheticRoutingSpec spec{4096, shape.experts, shape.top_k, 0.032, 5};
    const std::vector<int64_t> loads = synthetic_expert_loads(spec);
    const Routing r = generate_synthetic_routing(spec);
    EXPECT_EQ(r.tokens_per_expert(), loads);
    EXPECT_EQ(std::accumulate(loads.begin(), loads.end(), int64_t{0}), 4096 * shape.top_k);
    EXPECT_NO_THROW(r.check_complete());  // every slot set, no token repeats an expert
    for (int64_t t = 0; t < r.tokens(); ++t) {
      float sum = 0;
      for (int64_t j = 0; j < r.top_k(); ++j) {
        sum += r.weight(t, j);
        if (j > 0) {
          EXPECT_GE(r.weight(t, j - 1), r.weight(t, j));
        }
      }
      EXPECT_NEAR(sum, 1.0f, 1e-5f);
    }
  }
}

TEST(SyntheticRouting, ZeroStdIsExactlyUniformWhenDivisible) {
  for (const Shape& shape : kShapes) {
    const std::vector<int64_t> loads = synthetic_expert_loads({8192, shape.experts, shape.top_k, 0.0, 3});
    for (int64_t c : loads) EXPECT_EQ(c, 8192 * shape.top_k / shape.experts);
    EXPECT_EQ(load_std(loads), 0.0);
  }
  // 10 rows over 3 experts: 4, 3, 3 in a seeded order.
  const std::vector<int64_t> odd = synthetic_expert_loads({10, 3, 1, 0.0, 3});
  EXPECT_EQ(*std::max_element(odd.begin(), odd.end()), 4);
  EXPECT_EQ(*std::min_element(odd.begin(), odd.end()), 3);
}

TEST(SyntheticRouting, DeterministicFromTheSeed) {
  const SyntheticRoutingSpec spec{2048, 16, 2, 0.02, 42};
  const Routing a = generate_synthetic_routing(spec);
  const Routing b = generate_synthetic_routing(spec);
  EXPECT_EQ(a.expert_ids(), b.expert_ids());
  EXPECT_EQ(a.weights(), b.weights());
  SyntheticRoutingSpec other = spec;
  other.seed = 43;
  EXPECT_NE(generate_synthetic_routing(other).expert_ids(), a.expert_ids());
}

TEST(SyntheticRouting, NearTheLargestStdNoExpertExceedsTheTokenCount) {
  // max_load_std(8, 2) = sqrt((2 x 0.375^2 + 6 / 64) / 8) = sqrt(0.046875).
  EXPECT_NEAR(max_load_std(8, 2), 0.21650635094610965, 1e-15);
  EXPECT_EQ(max_load_std(4, 4), 0.0);  // every token uses every expert
  const SyntheticRoutingSpec spec{100, 8, 2, 0.2, 9};
  const Routing r = generate_synthetic_routing(spec);
  for (int64_t c : r.tokens_per_expert()) EXPECT_LE(c, 100);
  EXPECT_NEAR(load_std(r.tokens_per_expert()), 0.2, 0.02);
  EXPECT_NO_THROW(r.check_complete());
}

TEST(SyntheticRouting, UnreachableStdNamesTheKey) {
  try {
    synthetic_expert_loads({8192, 8, 2, 0.3, 1});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.imbalance_std");
    EXPECT_NE(e.reason().find("0.2165"), std::string::npos) << e.reason();
  }
  EXPECT_THROW(synthetic_expert_loads({64, 4, 4, 0.01, 1}), UserError);
}

TEST(LoadStd, HandComputed) {
  // Fractions 0.5, 0.25, 0.25, 0 around 0.25: deviations 0.25, 0, 0, -0.25 -> sqrt(0.125 / 4).
  EXPECT_DOUBLE_EQ(load_std({4, 2, 2, 0}), std::sqrt(0.03125));
  EXPECT_EQ(load_std({3, 3, 3}), 0.0);
  EXPECT_EQ(load_std({}), 0.0);
}

}  // namespace
}  // namespace moehub
