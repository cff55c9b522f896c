// Model-level tests (numbers: timing, counts, statistics) split from tutel_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

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

// The harness's experts (Tutel's 'ffn' type: fc1, SiLU, fc2) on a gated preset: GEMM1 has F
// columns, not the gate and up halves' 2F, so half the tiles of the preset's expert at the
// same rows, and the functional reference computes the same plain FFN (the run above passes
// against it, the gated one against the gated reference).
TEST(Tutel, TheHarnessExpertsArePlainFfns) {
  auto plain = run_system("tutel", {"systems.tutel.overlap_degree=1"});
  auto gated = run_system("tutel", {"systems.tutel.overlap_degree=1", "systems.tutel.expert_ffn=model"});
  ASSERT_TRUE(gated->workload.model().gated);
  EXPECT_FALSE(plain->workload.model().gated);
  EXPECT_EQ(plain->system->stats(*plain->cluster)["expert_ffn"], "plain");
  EXPECT_EQ(gated->system->stats(*gated->cluster)["expert_ffn"], "gated");
  const auto blocks = [](Cluster& c, const std::string& name) {
    uint64_t b = 0;
    for (const auto& k : kernels(c, 0)) b += k.name == name ? k.blocks : 0;
    return b;
  };
  EXPECT_EQ(2 * blocks(*plain->cluster, "tutel_gemm1"), blocks(*gated->cluster, "tutel_gemm1"));
  EXPECT_EQ(blocks(*plain->cluster, "tutel_gemm2"), blocks(*gated->cluster, "tutel_gemm2"));
  const auto compute = [](Cluster& c) {
    Time sum = Time::zero();
    for (const auto& iv : c.activity(0).intervals()) sum += iv.what == Activity::ExpertCompute ? iv.end - iv.start : Time::zero();
    return sum;
  };
  EXPECT_LT(compute(*plain->cluster), compute(*gated->cluster));
}

TEST(Tutel, NoHostSyncWithAPositiveCapacityFactorOneWithZero) {
  auto r = run_system("tutel", {"systems.tutel.capacity_factor=1.0"});
  for (int g = 0; g < r->cluster->gpus(); ++g) {
    EXPECT_EQ(test::count_activity(*r->cluster, g, Activity::Synchronisation), 0);
  }
  auto d = run_system("tutel", {"systems.tutel.capacity_factor=0"});
  for (int g = 0; g < d->cluster->gpus(); ++g) {
    EXPECT_EQ(test::count_activity(*d->cluster, g, Activity::Synchronisation), 1);
  }
  EXPECT_EQ(d->system->stats(*d->cluster)["dropped_rows"], 0);
}

TEST(Tutel, OverlapDegreeSplitsTheAllToAllsAndExperts) {
  auto r = run_system("tutel", {"systems.tutel.overlap_degree=4"});
  int scatter = 0, gather = 0, gemm1 = 0;
  for (const auto& k : kernels(*r->cluster, 0)) {
    scatter += k.name.rfind("tutel_a2a_scatter_", 0) == 0 ? 1 : 0;
    gather += k.name.rfind("tutel_a2a_gather_", 0) == 0 ? 1 : 0;
    gemm1 += k.name == "tutel_gemm1" ? 1 : 0;
  }
  EXPECT_EQ(scatter, 4);
  EXPECT_EQ(gather, 4);
  EXPECT_EQ(gemm1, 4);
}

// Written from microsoft/tutel v0.3.0 (commit 71db950; docs/systems/tutel.md) for top-2,
// capacity factor 1, one local expert per GPU. Framework ops before the exchange: reshape,
// .to (2); gate linear (1); softmax, topk (2); chunk + 2 views (3); 2 one-hots of zeros,
// unsqueeze, scatter_ (6); 2 x (mul, sum) (4); gshard_loss (9); slot 0: cumsum, mul, sum,
// .to(int32) (4); slot 1: column sum, cumsum, += base, mul, sum, .to(int32) (6); normalize:
// 0 + g0, + g1, clamp, 2 divisions (5); [-1], + 1 (2); 2 x .to(int32) (2): 46. Encode: .to,
// update (4 per slot: 8), cast up, GatingEncoder.apply, zeros, 2 scatters, cast down, view,
// .to: 17. Decode: .to, update (8), cast up, apply, 2 x (empty, gather), 1 add, cast down,
// 2 views, .to: 20. Together 83 framework ops. Kernels: gate 1, softmax and topk 2, one-hots
// 4, gate values 4, loss 7, slot 0 5 (the cumsum op runs 2), slot 1 7, normalize 5, + 1 1,
// int32 indices 2: 38; encode 2 + 5 = 7; decode 2 + 1 + 2 + 1 + 1 = 7: 52.
// Experts of one chunk (moe_layer.py:214-217, experts/ffn.py:55-98): x.view, 2 unsqueezes,
// w1.permute, matmul, add, silu, matmul, add, reshape: 10 ops, 5 kernels.
constexpr uint64_t kOpsOutsideExchange = 83, kKernelsOutsideExchange = 52;

// Overlap degree 2 (d), overlap.py:29-65 with communicate.py:220-330: CurrentStreamRelease
// (apply, contiguous; 1 record), AllToAllScatterAsync.apply (1 wait, d NCCL groups, d
// records); per chunk CurrentStreamAcquire (1 op, 1 wait), pre_expert_permute (view, permute,
// contiguous, view: 4 ops, 1 kernel), the experts (10, 5), post_expert_permute (4, 1),
// CurrentStreamRelease (2 ops, 1 record); AllToAllGatherAsync.apply (1 op, d waits, d NCCL
// groups, 1 record); CurrentStreamAcquire (1 op, 1 wait). Ops 5 + 21d = 47, kernels 7d + 2d
// NCCL = 18, events 4d + 4 = 12.
TEST(Tutel, OpCountsAsTheCodeIssuesThem) {
  auto r = run_system("tutel", {"systems.tutel.overlap_degree=2", "systems.tutel.capacity_factor=1.0"});
  Cluster& c = *r->cluster;
  ASSERT_EQ(c.model().top_k(), 2);
  for (int g = 0; g < c.gpus(); ++g) {
    ASSERT_EQ(c.workload().placement().local_experts(g).size(), 1u);
    const gpu::HostOps o = c.host(g).ops();
    EXPECT_EQ(o.framework_ops, kOpsOutsideExchange + 47) << "GPU " << g;
    EXPECT_EQ(o.kernels, kKernelsOutsideExchange + 18) << "GPU " << g;
    EXPECT_EQ(kernels(c, g).size(), kKernelsOutsideExchange + 18) << "GPU " << g;
    EXPECT_EQ(o.nccl_calls, 4u) << "GPU " << g;
    EXPECT_EQ(o.events, 12u) << "GPU " << g;
    EXPECT_EQ(o.syncs, 0u) << "GPU " << g;
    EXPECT_EQ(o.d2h_copies, 0u) << "GPU " << g;
  }
}

// Degree 1, the authors' harness (moe_layer.py:302-305): C.all_to_all(y, 1, 0) is
// simple_all_to_all's contiguous (no kernel), empty_like, dist.all_to_all_single (record on the
// compute stream, ProcessGroupNCCL's stream waits, one NCCL group, end record), work.wait()
// (1 wait), RestoreBackward.apply, then view, permute, contiguous (the copy), view: 9 ops,
// 1 kernel; the experts (10, 5); C.all_to_all(y, 0, 1) is view, permute, contiguous (the copy),
// empty_like, all_to_all_single, wait, RestoreBackward.apply, view: 8 ops, 1 kernel. Ops 27,
// kernels 7 + 2 NCCL, events 2 x 4 = 8.
TEST(Tutel, UnpipelinedOpCountsAsTheCodeIssuesThem) {
  auto r = run_system("tutel", {"systems.tutel.overlap_degree=1", "systems.tutel.capacity_factor=1.0"});
  Cluster& c = *r->cluster;
  for (int g = 0; g < c.gpus(); ++g) {
    ASSERT_EQ(c.workload().placement().local_experts(g).size(), 1u);
    const gpu::HostOps o = c.host(g).ops();
    EXPECT_EQ(o.framework_ops, kOpsOutsideExchange + 27) << "GPU " << g;
    EXPECT_EQ(o.kernels, kKernelsOutsideExchange + 9) << "GPU " << g;
    EXPECT_EQ(o.nccl_calls, 2u) << "GPU " << g;
    EXPECT_EQ(o.events, 8u) << "GPU " << g;
    EXPECT_EQ(o.syncs, 0u) << "GPU " << g;
  }
}

// parallel_type 'model' (16 GPUs, Mixtral's 8 experts, sharded_count r = 2; tutel_shards.h) adds
// to the program above: y.repeat (1 op, 1 kernel) and its view (1); per FusedExpertsNetwork
// call the fc2-bias all-gather (ffn.py:87-91 through communicate.py:179-187, 499-507):
// PrimAllgather.apply, contiguous, empty, chunk, view(1, -1), dist.all_gather (events: record,
// wait, NCCL kernel, r copies on the group's stream, record), work.wait (wait), output.view,
// view(-1), [:numel], view(full_shape), view(1, 1, -1), torch.mul: 13 ops, 1 NCCL call, r + 2
// kernels, 4 events; after the combine view and torch.sum (2 ops, 1 kernel).
TEST(Tutel, ModelParallelOpCountsAsTheCodeIssuesThem) {
  for (const int degree : {1, 2}) {
    auto r = run_system("tutel", {"run.gpus=16", "parallel.tp=2", "systems.tutel.parallel_type=model",
                                  "systems.tutel.overlap_degree=" + std::to_string(degree), "systems.tutel.capacity_factor=1.0"});
    Cluster& c = *r->cluster;
    const uint64_t d = static_cast<uint64_t>(degree);
    const uint64_t exchange_ops = degree == 1 ? 27 : 5 + 21 * d, exchange_kernels = 9 * d;
    for (int g = 0; g < c.gpus(); ++g) {
      ASSERT_EQ(c.workload().placement().local_experts(g).size(), 1u);
      const gpu::HostOps o = c.host(g).ops();
      EXPECT_EQ(o.framework_ops, kOpsOutsideExchange + 4 + exchange_ops + 13 * d) << "GPU " << g << " degree " << degree;
      EXPECT_EQ(o.kernels, kKernelsOutsideExchange + 2 + exchange_kernels + 4 * d) << "GPU " << g << " degree " << degree;
      EXPECT_EQ(kernels(c, g).size(), kKernelsOutsideExchange + 2 + exchange_kernels + 4 * d) << "GPU " << g;
      EXPECT_EQ(o.nccl_calls, 3 * d) << "GPU " << g;
      EXPECT_EQ(o.events, (degree == 1 ? 8 : 4 * d + 4) + 4 * d) << "GPU " << g;
      EXPECT_EQ(o.syncs, 0u) << "GPU " << g;
    }
  }
  // r = 3 (24 GPUs) does not divide H = 64: each GPU holds ceil(64 / 3) = 22 bias elements, and
  // the gathered 66 are sliced back to 64 (ffn.py:93-94): one op more; r + 2 = 5 bias kernels.
  auto r3 = run_system("tutel", {"run.gpus=24", "parallel.tp=3", "model.ffn_hidden=192", "systems.tutel.parallel_type=model",
                                 "systems.tutel.overlap_degree=1", "systems.tutel.capacity_factor=1.0"});
  const gpu::HostOps o = r3->cluster->host(0).ops();
  EXPECT_EQ(o.framework_ops, kOpsOutsideExchange + 4 + 27 + 13 + 1);
  EXPECT_EQ(o.kernels, kKernelsOutsideExchange + 2 + 9 + 5);
}

// Padding: with capacity factor 4 every expert multiplies 8 x 2 * int(4 * 4) = 256 rows (two
// 128-row tiles) where the exact counts are about 64 (one tile): more GEMM1 tiles and time.
TEST(Tutel, CapacityPaddingCostsGemmTilesAndTime) {
  auto t = run_system("tutel", {"systems.tutel.capacity_factor=4.0", "systems.tutel.overlap_degree=1",
                                "systems.tutel.expert_ffn=model"});
  auto i = run_system("ideal", {});
  const auto blocks = [](Cluster& c, const std::string& name) {
    uint64_t b = 0;
    for (const auto& k : kernels(c, 0)) b += k.name == name ? k.blocks : 0;
    return b;
  };
  EXPECT_EQ(blocks(*t->cluster, "tutel_gemm1"), 2 * blocks(*i->cluster, "gemm1"));
  const auto compute = [](Cluster& c) {
    Time sum = Time::zero();
    for (const auto& iv : c.activity(0).intervals()) sum += iv.what == Activity::ExpertCompute ? iv.end - iv.start : Time::zero();
    return sum;
  };
  EXPECT_GT(compute(*t->cluster), compute(*i->cluster));
}

}  // namespace
}  // namespace moehub
