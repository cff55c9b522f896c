// Model-level tests (numbers: timing, counts, statistics) split from synthetic_routing_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

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
