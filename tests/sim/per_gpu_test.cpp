#include "sim/per_gpu.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

namespace moehub {
namespace {

TEST(PerGpu, IndexesByIntGpuIdAndIteratesInGpuOrder) {
  PerGpu<int> v(3, 7);
  EXPECT_EQ(v.size(), 3);
  for (int g = 0; g < v.size(); ++g) v[g] += g;
  int sum = 0;
  for (int x : v) sum += x;
  EXPECT_EQ(sum, 7 + 8 + 9);
  EXPECT_EQ(v.at(2), 9);
  EXPECT_THROW(v.at(3), std::out_of_range);
  EXPECT_THROW(v.at(-1), std::out_of_range);
}

TEST(PerGpu, FillsGpuByGpuAndHoldsMoveOnlyValues) {
  PerGpu<std::unique_ptr<int>> v;
  EXPECT_TRUE(v.empty());
  for (int g = 0; g < 4; ++g) v.push_back(std::make_unique<int>(g * g));
  EXPECT_EQ(*v[3], 9);
  EXPECT_EQ(*v.emplace_back(std::make_unique<int>(16)), 16);
  EXPECT_EQ(v.size(), 5);
  v.resize(2);
  EXPECT_EQ(v.size(), 2);
}

TEST(PerPair, IndexesBySourceAndDestinationAndTransposes) {
  PerPair<uint64_t> m(3);
  EXPECT_EQ(m.gpus(), 3);
  m(0, 2) = 5;
  m(2, 1) = 4;
  const PerPair<uint64_t> t = m.transposed();
  EXPECT_EQ(t(2, 0), 5u);
  EXPECT_EQ(t(1, 2), 4u);
  EXPECT_EQ(t(0, 2), 0u);
  EXPECT_EQ(t.transposed(), m);
  EXPECT_EQ(PerPair<int>(2, 1)(1, 1), 1);
}

TEST(PerPair, BuildsRowBySourceFromNestedBracesAndRefusesARaggedMatrix) {
  const PerPair<int> m{{1, 2}, {3, 4}};
  EXPECT_EQ(m.gpus(), 2);
  EXPECT_EQ(m(0, 1), 2);
  EXPECT_EQ(m(1, 0), 3);
  EXPECT_THROW((PerPair<int>{{1, 2}, {3}}), std::logic_error);
}

}  // namespace
}  // namespace moehub
