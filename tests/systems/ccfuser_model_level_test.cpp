// CCFuser: mechanism-level facts on small layers (hand-checkable, not the paper's numbers).
// Model-level tests (numbers: timing, counts, statistics) split from ccfuser_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "systems/system_run.h"

namespace moehub {
namespace {

using test::DefaultsRun;

// Written from WongHuLin/CCFuser 3e1990e (mix_moe/transformer.py process_data,
// select_popular_expert, divide_into_block; functions.py perpare_expert_assignment;
// gates/naive_gate.py). Framework ops: ensure_comm (1); NaiveGate: linear, topk, view, softmax,
// zeros, .cuda() (6); zeros, expert_count, long, expert_all_gather, cumsum, int, [-1], .item(),
// empty, assign_pos (10); reshape, .cpu() (2); select_popular_expert: sum, topk, tolist (3);
// divide_into_block: 8 before the popular experts, 4 per popular expert (3 of them) plus 3 for
// each whose row count from this rank is not a multiple of 64, 4 after: 46 + 3 x that number.
// Syncs: .cuda(), .item(), .cpu(); H2D copies: .cuda() and the 7 plan tensors.
TEST(Ccfuser, OpCountsAsTheCodeIssuesThem) {
  // Every rank sends each expert between 1 and 63 rows here (1024 tokens, top-2 of 8 experts on
  // 8 GPUs: about 32; BlocksOf64RowsPairedLocalWithRemote checks the bound), so each of the three
  // popular experts' counts is partial on every rank: 46 + 3 x 3 = 55 framework ops.
  DefaultsRun r("ccfuser", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024"});
  for (int g = 0; g < r.cluster->gpus(); ++g) {
    EXPECT_EQ(r.count(g, Activity::Synchronisation), 3);
    const gpu::HostOps o = r.cluster->host(g).ops();
    EXPECT_EQ(o.framework_ops, 55u) << "GPU " << g;
    EXPECT_EQ(o.nccl_calls, 1u) << "GPU " << g;
    EXPECT_EQ(o.syncs, 3u) << "GPU " << g;
    EXPECT_EQ(o.d2h_copies, 2u) << "GPU " << g;
    EXPECT_EQ(o.h2d_copies, 8u) << "GPU " << g;
  }
}

TEST(Ccfuser, BlocksOf64RowsPairedLocalWithRemote) {
  // 1024 tokens, top-2 of 8 experts, 8 GPUs: each GPU's expert gets rows from 8 sources, fewer
  // than 64 from each in this routing, so one block per (expert, source): 1 local + 7 remote,
  // paired as (local, remote) then 6 remote blocks alone.
  DefaultsRun r("ccfuser", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024"});
  for (int g = 0; g < r.cluster->gpus(); ++g) {
    const auto& s = r.stats["gpus"][g];
    uint64_t max_rows = 0;
    for (int src = 0; src < r.cluster->gpus(); ++src) {
      max_rows = std::max<uint64_t>(max_rows, static_cast<uint64_t>(r.workload.plan().rows_to_expert(src, g)));
    }
    ASSERT_LE(max_rows, 64u);
    EXPECT_EQ(s["blocks"].get<uint64_t>(), 8u);
    EXPECT_EQ(s["pairs"].get<uint64_t>(), 7u);
    EXPECT_EQ(s["fetched_blocks"].get<uint64_t>(), 7u);
  }
}

TEST(Ccfuser, WorkQueueSpreadsTilesOverMoreSmsThanTheStaticGrid) {
  DefaultsRun queue("ccfuser", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024"});
  DefaultsRun pairs("ccfuser", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024", "systems.ccfuser.schedule=static_pairs"});
  for (int g = 0; g < queue.cluster->gpus(); ++g) {
    EXPECT_LE(pairs.stats["gpus"][g]["gemm1_sms_used"].get<uint64_t>(), pairs.stats["gpus"][g]["pairs"].get<uint64_t>());
    EXPECT_GT(queue.stats["gpus"][g]["gemm1_sms_used"].get<uint64_t>(), queue.stats["gpus"][g]["pairs"].get<uint64_t>());
  }
}

}  // namespace
}  // namespace moehub
