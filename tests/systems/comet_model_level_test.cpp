// Comet: mechanism-level facts on small layers (hand-checkable, not the paper's numbers).
// Model-level tests (numbers: timing, counts, statistics) split from comet_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include "gpu/gpu_config.h"
#include "sim/error.h"
#include "systems/comet/comet_plan.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::DefaultsRun;

TEST(Comet, Gemm1TilesStartBeforeTheDispatchHasArrived) {
  DefaultsRun r("comet", {"run.tokens=2048", "model.hidden=1024", "model.ffn_hidden=1024", "systems.comet.comm_blocks=2"});
  for (int g = 0; g < r.cluster->gpus(); ++g) {
    const auto& s = r.stats["gpus"][g];
    ASSERT_TRUE(s.contains("gemm1_first_math_ps"));
    ASSERT_TRUE(s.contains("dispatch_end_ps"));
    // Tiles of local rows run while remote rows are still in flight.
    EXPECT_LT(s["gemm1_first_math_ps"].get<int64_t>(), s["dispatch_end_ps"].get<int64_t>()) << "GPU " << g;
    EXPECT_GT(s["polls"].get<uint64_t>(), 0u);
  }
}

TEST(Comet, CommunicationBlocksStayOnTheirSms) {
  DefaultsRun r("comet", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024", "systems.comet.comm_blocks=8", "systems.comet.gather_rs_ctas=28"});
  for (int g = 0; g < r.cluster->gpus(); ++g) {
    const auto& s = r.stats["gpus"][g];
    EXPECT_EQ(s["dispatch_comm_blocks"].get<uint32_t>(), 8u);
    EXPECT_GE(s["dispatch_comm_sm_min"].get<int>(), 0);
    EXPECT_LE(s["dispatch_comm_sm_max"].get<int>(), 7);
    EXPECT_GE(s["gemm1_min_sm"].get<int>(), 8);  // GEMM1 tiles only on the other SMs
    EXPECT_LE(s["gather_rs_sm_max"].get<int>(), 27);
    EXPECT_GE(s["gemm2_min_sm"].get<int>(), 28);
  }
}

// Written from the MoE-Hub authors' harness (ZSL98/Megatron-LM fd11ea94, moe_layer.py:694-729;
// docs/systems/comet.md). Framework ops: reshape, the router's linear, 2 views, topk,
// softmax, type_as, view(-1), bincount (9); 2 x torch.empty; 2 x _all_gather_base;
// forward_multiple_weights; activation; scatter_index.view(-1); forward_gather_rs; unsqueeze:
// 18. NCCL calls: the 2 all-gathers. Host syncs: bincount's min and max read to the host, and
// flux's layout sync: 3, each a D2H copy. Router kernels: the gate GEMM, topk, softmax, the
// cast back and bincount's min, max, zeros and histogram (8).
TEST(Comet, OpCountsAsTheCodeIssuesThem) {
  // Written from the code (docs/research/opcount-flashmoe.md section 4): the harness's router (8
  // kernels, bincount's 2 D2H + 2 syncs), 2 all-gathers; flux layer0: memset of the barrier
  // block, calc_gather_index, ag_scatter_sort, 2 D2H + sync, the arguments' H2D + sync, the fused
  // GEMM1 (one kernel however many grids), barrier; activation; layer1: zero_, barrier, 2 H2D,
  // ep_indexes_count.zero_(), ep_index_filter, the fused GEMM2, barrier, barrier.zero_(), sum.
  // copy_engine_gets adds the own shard's D2D copy and a barrier (its N - 1 gets are copies
  // that none of these counters holds).
  for (const char* mode : {"comm_blocks", "copy_engine_gets"}) {
    DefaultsRun r("comet", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024", std::string("systems.comet.dispatch=") + mode});
    const bool gets = std::string(mode) == "copy_engine_gets";
    for (int g = 0; g < r.cluster->gpus(); ++g) {
      EXPECT_EQ(r.count(g, Activity::Synchronisation), 4) << mode;
      const gpu::HostOps o = r.cluster->host(g).ops();
      EXPECT_EQ(o.framework_ops, 18u) << mode << " GPU " << g;
      EXPECT_EQ(o.nccl_calls, 2u) << mode << " GPU " << g;
      EXPECT_EQ(o.syncs, 4u) << mode << " GPU " << g;
      EXPECT_EQ(o.d2h_copies, 4u) << mode << " GPU " << g;
      EXPECT_EQ(o.h2d_copies, 3u) << mode << " GPU " << g;
      EXPECT_EQ(o.kernels, gets ? 26u : 24u) << mode << " GPU " << g;
      int router = 0;
      for (const auto& k : test::kernels(*r.cluster, g)) router += k.name.rfind("comet_router_", 0) == 0 ? 1 : 0;
      EXPECT_EQ(router, 8) << mode << " GPU " << g;
    }
  }
}

TEST(Comet, CommBlocksPushRowsWithStoresAndGetsUseReads) {
  DefaultsRun push("comet", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024"});
  const nlohmann::json a = push.cluster->network().stats()["packets_delivered_by_kind"];
  EXPECT_EQ(a["read_request"].get<uint64_t>(), 0u);
  // Every remote dispatch row is one store of row_bytes / 128 packets; the combine sends partials.
  EXPECT_GE(a["write"].get<uint64_t>(),
            static_cast<uint64_t>(push.workload.plan().remote_rows()) * push.workload.model().row_bytes() / 128);

  DefaultsRun get("comet", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024", "systems.comet.dispatch=copy_engine_gets"});
  const nlohmann::json b = get.cluster->network().stats()["packets_delivered_by_kind"];
  // flux's layer0 pulls every other GPU's whole token shard: 7 shards of 128 tokens each.
  const uint64_t shard = 128ull * get.workload.model().row_bytes();
  EXPECT_EQ(b["read_response"].get<uint64_t>(), 8u * 7u * shard / 128u);
  EXPECT_EQ(b["read_request"].get<uint64_t>(), b["read_response"].get<uint64_t>());
  for (int g = 0; g < get.cluster->gpus(); ++g) EXPECT_EQ(get.stats["gpus"][g]["dispatch_comm_blocks"].get<uint32_t>(), 0u);
}

}  // namespace
}  // namespace moehub
