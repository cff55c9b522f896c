// Model-level tests (numbers: timing, counts, statistics) split from synthetic_routing_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/synthetic_routing.h"
#include "sim/error.h"

namespace moehub {
namespace {

struct Shape {
  const char* model;
  int64_t experts;
  int64_t top_k;
};

// Mixtral (8 experts, top-2), Phi-3.5-MoE (16, top-2), Qwen2-MoE as in the paper (64, top-4).
constexpr Shape kShapes[] = {{"mixtral", 8, 2}, {"phi", 16, 2}, {"qwen", 64, 4}};

TEST(SyntheticRouting, MeasuredStdLandsWithinTenPercentOfTheRequest) {
  for (const Shape& shape : kShapes) {
    for (double std_request : {0.005, 0.01, 0.02, 0.032, 0.05}) {
      for (uint64_t seed : {1u, 2u, 3u, 17u, 12345u}) {
        SCOPED_TRACE(testing::Message() << shape.model << " std " << std_request << " seed " << seed);
        const Routing r = generate_synthetic_routing({8192, shape.experts, shape.top_k, std_request, seed});
        const double measured = load_std(r.tokens_per_expert());
        EXPECT_NEAR(measured, std_request, 0.1 * std_request);
      }
    }
  }
}

}  // namespace
}  // namespace moehub
