// megatron-te: the mechanism-level facts of Megatron's all-to-all dispatcher, and the NCCL
// collectives it runs on (the grouped all-to-all every NCCL-based system shares).
// Model-level tests (numbers: timing, counts, statistics) split from megatron_te_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "platform/nccl_group_call.h"
#include "platform/nccl_ring.h"
#include "platform/nccl_ring_all_gather.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

// The counts written from the code (docs/systems/megatron-te.md): the router's 23 kernels and
// 26 framework ops (training, aux loss); the dispatcher's preprocess (6 kernels: the counts,
// input_splits, the local columns' copy and their three sums; 12 framework ops, 13 with the
// `.view` of more than one local expert); permutation 1 (the map's transposing copy, arange,
// two masked_selects of 6 kernels each (5 when the mask fits one CUB tile), the row gather,
// the probs' transposing copy: 16 kernels, 11 framework ops, 2 D2H copies and 2 syncs);
// the D2H stream's wait_stream, 4 copies (5 with the per-expert matrix when E_l > 1) and its
// event record, the event's synchronize; the three all-to-alls and the count all-gather (4
// NCCL calls); sort_chunks_by_idxs of rows and probs and the unsort (only when E_l > 1);
// the swiglu's `view` and `SwiGLUFunction.apply`, the activation and unpermute's zeros and
// scatter_add; the experts' 15 host-only torch
// calls and 2 GEMMs per local expert with rows (TE's per-expert cuBLAS GEMMs); events: the D2H
// stream's record and wait and its event record, and per GroupedLinear one record on the
// compute stream, a wait and a record on each of S = min(4, G) side streams and S waits back.
TEST(MegatronTe, OpCountsAsTheCodeIssuesThem) {
  for (const int local : {1, 2, 8}) {
    // 4 GPUs, `local` experts each, top-1 routing over 4096 tokens: every expert gets rows.
    SystemRun r("megatron-te", {"run.gpus=4", "model.experts=" + std::to_string(4 * local), "model.top_k=1",
                                "run.tokens=4096"},
                false);
    r.run();
    const uint64_t g_rows = static_cast<uint64_t>(local), s = std::min<uint64_t>(4, g_rows);
    const uint64_t sorts = local > 1 ? 3 : 0, many = local > 1 ? 1 : 0;
    // Each GPU routes 1024 tokens: the [4 x local, 1024] mask fits one CUB reduce tile (4096
    // entries) only with one local expert, where each masked_select's count is one kernel.
    const uint64_t one_tile = local > 1 ? 0 : 2;
    for (int g = 0; g < 4; ++g) {
      const gpu::HostOps o = r.cluster->host(g).ops();
      EXPECT_EQ(o.kernels, 23 + 6 + 1 + 16 - one_tile + 2 + sorts + 1 + 1 + 2 + 2 * g_rows) << "E_l " << local << " GPU " << g;
      // + 6: each of the three all_to_alls' contiguous() and new_empty() (mappings.py:416-445).
      EXPECT_EQ(o.framework_ops, 26 + (12 + many) + (6 + many) + 11 + 1 + sorts + 2 + 1 + 2 + 15 + 6) << "E_l " << local;
      EXPECT_EQ(o.autograd_functions, 3u);  // _AllToAll.apply x 3
      EXPECT_EQ(o.nccl_calls, 4u);
      EXPECT_EQ(o.d2h_copies, 4 + many + 2) << "E_l " << local;
      EXPECT_EQ(o.syncs, 3u);
      EXPECT_EQ(o.events, 3 + 2 * (1 + 3 * s)) << "E_l " << local;
    }
  }
}

// A masked_select's nonzero count is one CUB kernel up to one reduce tile (4096 mask entries)
// and two above it: 2 experts x 1024 tokens fit one tile, so each of permutation 1's two
// masked_selects launches one kernel fewer than over 2 x 4096.
TEST(MegatronTe, MaskedSelectCountKernelsFollowCubsTile) {
  SystemRun one_tile("megatron-te", {"run.gpus=2", "model.experts=2", "model.top_k=1", "run.tokens=2048"}, false);
  SystemRun two_tiles("megatron-te", {"run.gpus=2", "model.experts=2", "model.top_k=1", "run.tokens=8192"}, false);
  one_tile.run();
  two_tiles.run();
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(two_tiles.cluster->host(g).ops().kernels, one_tile.cluster->host(g).ops().kernels + 2) << "GPU " << g;
  }
}

// The calls Megatron's dispatcher adds under EP+TP (token_dispatcher.py dispatch_postprocess,
// combine_preprocess): the TP all-gathers of rows and probs, the fp32 cast, the reduce-scatter
// and the cast back: 3 NCCL calls and kernels, 2 ATen ops. With EP 1 the three EP all-to-alls
// go (mappings.py _AllToAll returns its input). Every TP rank computes on all rows of its
// group's experts: the rows routed to them from all 4 GPUs.
TEST(MegatronTe, OpCountsAndRowsUnderTp) {
  for (const int tp : {2, 4}) {
    // 4 GPUs, 8 experts, top-1 routing over 4096 tokens: every expert gets rows.
    SystemRun r("megatron-te", {"run.gpus=4", "model.experts=8", "model.top_k=1", "run.tokens=4096",
                                "parallel.tp=" + std::to_string(tp)},
                false);
    r.run();
    const uint64_t local = static_cast<uint64_t>(8 / (4 / tp)), s = std::min<uint64_t>(4, local);
    const uint64_t a2a = tp == 4 ? 3 : 0;  // the EP all-to-alls that EP 1 leaves out
    for (int g = 0; g < 4; ++g) {
      const gpu::HostOps o = r.cluster->host(g).ops();
      EXPECT_EQ(o.kernels, 55 - a2a + 3 + 2 + 2 * local) << "TP " << tp << " GPU " << g;
      // The all_to_alls' contiguous() and new_empty(): with EP 1 _AllToAll returns its input first.
      EXPECT_EQ(o.framework_ops, 26u + 13u + 7u + 11u + 1u + 3u + 2u + 1u + 2u + 15u + 2u + 2 * (3 - a2a));
      EXPECT_EQ(o.autograd_functions, 3u);
      EXPECT_EQ(o.nccl_calls, 4 - a2a + 3);
      EXPECT_EQ(o.events, 3 + 2 * (1 + 3 * s));
      EXPECT_EQ(o.syncs, 3u);
      // The dispatch ends with the all-gather, before the first GEMM; the reduce-scatter
      // starts after the last.
      const PhaseMarks& p = r.cluster->phases(g);
      const auto [first_gemm, last_expert] = r.span(g, Activity::ExpertCompute);
      ASSERT_TRUE(p.dispatch_end && p.combine_start);
      EXPECT_GE(first_gemm, *p.dispatch_end);
      EXPECT_GE(*p.combine_start, last_expert);
    }
  }
}

TEST(MegatronTe, LayerTimeGrowsWithTokens) {
  SystemRun small("megatron-te", {"run.tokens=256"}, false);
  SystemRun large("megatron-te", {"run.tokens=4096"}, false);
  small.run();
  large.run();
  EXPECT_GT(large.layer(), small.layer());
}

// --- the rank collectives ---

// --- the TP group's ring chains (NcclRing) ---

}  // namespace
}  // namespace moehub
