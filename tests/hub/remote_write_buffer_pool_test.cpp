#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "hub/remote_write_buffer_pool.h"
#include "sim/rng.h"

namespace moehub {
namespace {

RpmConfig pool_config(uint32_t entries_per_peer) {
  RpmConfig c;
  c.partitions = 2;
  c.entries_per_peer = entries_per_peer;
  c.entry_bytes = 128;
  c.mask_granule_bytes = 32;
  return c;
}

// Random stores and removals on a small partition (an index of 16 buckets for 8 entries, so
// probe chains collide and wrap) agree with a plain map of line -> bytes written.
TEST(RemoteWriteBufferPool, MergesAndRemovalsAgreeWithAShadowUnderChurn) {
  RemoteWriteBufferPool pool(pool_config(8), 2);
  Rng rng(3, 0);
  std::map<uint64_t, uint32_t> shadow;  // line address -> 32 B granules stored
  std::map<uint64_t, uint32_t> masks;   // line address -> granules written (bit per granule)
  uint64_t merges = 0;
  for (int step = 0; step < 20000; ++step) {
    if (rng.below(3) != 0 || shadow.empty()) {
      const uint64_t line = rng.below(40) * 128;
      const uint64_t granule = rng.below(4);
      const bool fits = shadow.count(line) || shadow.size() < 8;
      ASSERT_EQ(pool.try_insert(0, RemoteStore::plain(line + granule * 32, 32), Time::zero()), fits) << step;
      if (!fits) continue;
      if (shadow.count(line)) ++merges;
      ++shadow[line];
      masks[line] |= 1u << granule;
    } else {
      pool.flush();  // every entry ready: take the first in send order
      const auto pick = pool.candidate(0, Time::zero());
      ASSERT_TRUE(pick.has_value());
      const HubPacket p = pool.packet(0, *pick);
      ASSERT_EQ(p.stores_merged, shadow.at(p.address)) << "line " << p.address;
      pool.take(0, *pick);
      shadow.erase(p.address);
      masks.erase(p.address);
    }
    ASSERT_EQ(pool.merges(), merges);
    size_t non_full = 0;
    for (const auto& [line, mask] : masks) non_full += mask != 0xF;
    ASSERT_EQ(pool.non_full_entries(), non_full) << step;
    ASSERT_EQ(pool.free_entries(0), 8 - shadow.size());
  }
  EXPECT_EQ(pool.free_entries(1), 8u);
}

}  // namespace
}  // namespace moehub
