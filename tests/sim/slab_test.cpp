#include "sim/slab.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace moehub {
namespace {

TEST(Slab, TakeReturnsTheValueAndItsIdIsReusedLastFreedFirst) {
  Slab<std::string> slab;
  const uint32_t a = slab.put("a");
  const uint32_t b = slab.put("b");
  const uint32_t c = slab.put("c");
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(c, 2u);
  EXPECT_EQ(slab.take(b), "b");
  EXPECT_EQ(slab.take(a), "a");
  EXPECT_EQ(slab.put("d"), a);  // last freed first
  EXPECT_EQ(slab.put("e"), b);
  EXPECT_EQ(slab.put("f"), 3u);
  slab.at(c) += "!";
  EXPECT_EQ(slab.take(c), "c!");
}

TEST(Slab, HoldsMoveOnlyValues) {
  Slab<std::unique_ptr<int>> slab;
  const uint32_t id = slab.put(std::make_unique<int>(7));
  EXPECT_EQ(*slab.take(id), 7);
}

}  // namespace
}  // namespace moehub
