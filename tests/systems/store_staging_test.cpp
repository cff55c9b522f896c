// StoreStaging: the staging FIFO every store path shares (plain stores and MoE-Hub's lanes).
// Expectations computed by hand for a 1000 B FIFO.

#include <gtest/gtest.h>

#include <vector>

#include "platform/store_staging.h"

namespace moehub {
namespace {

gpu::StoreRequest store_of(uint64_t bytes, uint32_t dst = 1) {
  gpu::StoreRequest s;
  s.dst_gpu = dst;
  s.bytes = bytes;
  s.tag = bytes;  // lets the test tell stores apart
  return s;
}

TEST(StoreStaging, AnEmptyFifoTakesAnySizeAFullOneRefuses) {
  Simulator sim;
  StoreStaging f(sim, 1000);
  EXPECT_TRUE(f.admit(store_of(1500), [] {}));  // larger than the FIFO, but it is empty
  EXPECT_FALSE(f.admit(store_of(1), [] {}));
  EXPECT_EQ(f.refused(), 1u);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.front().dst, 1);
  EXPECT_EQ(f.front().bytes, 1500u);
}

TEST(StoreStaging, TheNextStageTakesPiecesInOrder) {
  Simulator sim;
  StoreStaging f(sim, 1000);
  ASSERT_TRUE(f.admit(store_of(300), [] {}));
  ASSERT_TRUE(f.admit(store_of(200), [] {}));
  f.took(128);
  EXPECT_EQ(f.front().done, 128u);
  f.took(172);
  EXPECT_EQ(f.front().tag, 200u);  // the first store is gone
  f.took(200);
  EXPECT_TRUE(f.empty());
}

TEST(StoreStaging, RefusedStoresRetryOldestFirstUntilTheFifoIsFullAgain) {
  Simulator sim;
  StoreStaging f(sim, 1000);
  ASSERT_TRUE(f.admit(store_of(600), [] {}));
  std::vector<int> retried;
  // Three blocks refused in turn (600 + 500 > 1000); each retries by admitting its store again.
  for (int block = 0; block < 3; ++block) {
    EXPECT_FALSE(f.admit(store_of(500), [&f, &retried, block] {
      retried.push_back(block);
      EXPECT_TRUE(f.admit(store_of(500), [] {}));
    }));
  }
  f.release();  // still 600 B staged: nobody fits
  sim.run();
  EXPECT_TRUE(retried.empty());
  f.took(600);
  f.release();  // empty: block 0 (500 B), then block 1 (1000 B); block 2 would make 1500 B
  sim.run();
  EXPECT_EQ(retried, (std::vector<int>{0, 1}));
  f.took(500);
  f.release();  // 500 B staged: block 2 fits
  sim.run();
  EXPECT_EQ(retried, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.refused(), 3u);
}

}  // namespace
}  // namespace moehub
