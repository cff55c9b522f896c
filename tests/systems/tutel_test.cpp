#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "sim/error.h"
#include "systems/system_run.h"
#include "systems/tutel/tutel_capacity.h"
#include "systems/tutel/tutel_system.h"
#include "../gpu/gpu_test_support.h"

namespace moehub {
namespace {

using test::kernels;
using test::run_system;

TEST(TutelCapacity, FollowsExtractCritical) {
  // k * int(cf * ceil(T / E)), then rounded up to the alignment.
  EXPECT_EQ(tutel_capacity(1.0, 32, 8, 2, 99, 1), 8);
  EXPECT_EQ(tutel_capacity(1.5, 32, 8, 2, 99, 1), 12);
  EXPECT_EQ(tutel_capacity(0.3, 32, 8, 2, 99, 1), 2);   // int(1.2) = 1
  EXPECT_EQ(tutel_capacity(1.0, 33, 8, 2, 99, 1), 10);  // ceil(33 / 8) = 5
  EXPECT_EQ(tutel_capacity(1.0, 32, 8, 2, 99, 3), 9);   // 8 aligned to 3
  EXPECT_EQ(tutel_capacity(0.0, 32, 8, 2, 11, 4), 12);  // the largest count, aligned
  EXPECT_EQ(tutel_capacity(-1.0, 32, 8, 2, 11, 1), 8);  // capped at k * int(1 * 4)
  EXPECT_EQ(tutel_capacity(-2.0, 32, 8, 2, 11, 1), 11);
  EXPECT_EQ(tutel_capacity(-1e30, 32, 8, 2, 11, 1), 11);  // the cap never binds
}

TEST(TutelCapacity, AFactorBeyondThirtyTwoBitLocationsNamesTheFactor) {
  // k * int(cf * 4) = 2 * 1073741824 = 2^31: one more than INT32_MAX.
  EXPECT_EQ(tutel_capacity(268435455.75, 32, 8, 2, 99, 1), 2 * 1073741823);
  try {
    tutel_capacity(268435456.0, 32, 8, 2, 99, 1);
    FAIL() << "a capacity above 2^31 - 1 rows must be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "systems.tutel.capacity_factor");
  }
  EXPECT_THROW(tutel_capacity(1e30, 32, 8, 2, 99, 1), UserError);
}

TEST(TutelAdaptiveDegree, WeightBoundChunksStayWholeAndLargeOnesPipeline) {
  // Mixtral-sized experts (16 of them, top-2) on 8 H800-like GPUs, 2 local experts each,
  // capacity factor 1.
  ModelShape m;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.router.experts = 16;
  m.router.top_k = 2;
  m.gated = true;
  m.dtype_bytes = 2;
  const gpu::GpuConfig g = gpu::testing::h800();
  const Bandwidth nvlink = Bandwidth::bytes_per_second(200'000'000'000ULL);
  // 256 tokens per GPU: capacity 2 x 16 = 32 rows per expert; the expert GEMMs only stream
  // their weights (2 x 3 x 4096 x 14336 x 2 B = 705 MB per pass), so every extra chunk re-reads
  // them: one chunk is fastest.
  EXPECT_EQ(tutel_adaptive_degree(g, m, 8, 2, 1.0, 256, 64, nvlink), 1);
  // 8192 tokens per GPU: 1024 rows per expert, compute-bound chunks; pipelining hides the
  // all-to-alls, so some d > 1 wins.
  EXPECT_GT(tutel_adaptive_degree(g, m, 8, 2, 1.0, 8192, 2048, nvlink), 1);
  // The NVLink term by hand: at d = 1 each GPU sends 7 GPUs x 2 experts x 32 rows x 8 KiB
  // = 3670016 B for the scatter and again for the gather: halving the bandwidth adds
  // 2 x 3670016 B / 100 GB/s - 2 x 3670016 B / 200 GB/s = 36.70016 us.
  const auto fast = tutel_degree_estimates(g, m, 8, 2, 1.0, 256, 64, nvlink);
  const auto slow = tutel_degree_estimates(g, m, 8, 2, 1.0, 256, 64, Bandwidth::bytes_per_second(100'000'000'000ULL));
  ASSERT_EQ(fast.front().degree, 1);
  EXPECT_NEAR((slow.front().seconds - fast.front().seconds) * 1e6, 36.70016, 1e-6);
}

// 2 GPUs, 8 tokens each, Mixtral's 8 experts top-2: capacity = 2 * int(1.0 * ceil(8 / 8)) = 2.
// GPU 0: tokens 0-3 pick (0, 1), tokens 4-7 pick (1, 0). Slot 0 fills expert 0 with tokens
// 0-3 (locations 0-3) and expert 1 with tokens 4-7; slot 1 comes after (locations 4-7). Kept:
// slot 0 of tokens 0, 1 (expert 0) and 4, 5 (expert 1): 12 of 16 rows dropped, every token
// loses a slot. GPU 1: token 8 + i picks (i, i + 1 mod 8): two rows per expert, none dropped.
class TutelDrops : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per process and test: ctest runs the tests of this fixture side by side.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    trace_ = std::filesystem::temp_directory_path() /
             ("moehub_tutel_drops-" + std::to_string(::getpid()) + "-" + info->name() + ".csv");
    std::ofstream f(trace_);
    f << "token,layer,experts,weights\n";
    for (int t = 0; t < 4; ++t) f << t << ",0,0;1,0.75;0.25\n";
    for (int t = 4; t < 8; ++t) f << t << ",0,1;0,0.6;0.4\n";
    for (int i = 0; i < 8; ++i) f << 8 + i << ",0," << i << ";" << (i + 1) % 8 << ",0.5;0.5\n";
  }
  void TearDown() override { std::filesystem::remove(trace_); }
  std::vector<std::string> settings(std::string degree) const {
    return {"run.gpus=2", "run.tokens=16", "workload.routing_trace=" + trace_.string(),
            "systems.tutel.overlap_degree=" + degree};
  }
  std::filesystem::path trace_;
};

TEST_F(TutelDrops, DroppedRowsMatchTheCapacityMath) {
  auto r = run_system("tutel", settings("1"));
  const nlohmann::json s = r->system->stats(*r->cluster);
  EXPECT_EQ(s["capacity"], 2);
  EXPECT_EQ(s["dropped_rows"], 12);
  EXPECT_EQ(s["dropped_tokens"], 8);
  // 8 experts x 2 sources x 2 slots, of which 4 + 16 hold rows.
  EXPECT_EQ(s["expert_slots"], 32);
  EXPECT_EQ(s["padding_rows"], 12);
  const TutelSlots slots(r->workload, 2);
  EXPECT_EQ(slots.location(5, 0), 1);
  EXPECT_EQ(slots.location(2, 1), 6);  // after the four slot-0 rows of expert 1
  EXPECT_TRUE(slots.dropped(2, 0));
  EXPECT_FALSE(slots.dropped(1, 0));
  EXPECT_EQ(slots.kept(0, 0), 2);
  EXPECT_EQ(slots.kept(1, 3), 2);
}

TEST_F(TutelDrops, FunctionalCheckCountsDroppedRowsAsZero) {
  for (const char* ffn : {"plain", "model"}) {
    for (const char* degree : {"1", "2"}) {
      std::vector<std::string> set = settings(degree);
      set.push_back(std::string("systems.tutel.expert_ffn=") + ffn);
      auto r = run_system("tutel", set, true);
      const nlohmann::json rep = r->functional->report();
      EXPECT_TRUE(r->functional->passed()) << ffn << " " << degree << ": " << rep.dump();
      EXPECT_EQ(rep["dropped_rows"], 12);
    }
  }
}

}  // namespace
}  // namespace moehub
