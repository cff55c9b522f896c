// Model-level tests (numbers: timing, counts, statistics) split from fastermoe_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <algorithm>

#include "sim/error.h"
#include "systems/fastermoe/fastermoe_schedule.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::kernels;
using test::run_system;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// 4 GPUs, 8 experts (2 per GPU), group size 1: 4 steps x 2 local experts NCCL calls each way.
TEST(FasterMoe, OpCountsAsTheCodeIssuesThem) {
  auto r = run_system("fastermoe", {"run.gpus=4", "systems.fastermoe.group_size=1"});
  Cluster& c = *r->cluster;
  for (int g = 0; g < 4; ++g) {
    int s = 0, back = 0;
    for (const auto& k : kernels(c, g)) {
      s += starts_with(k.name, "fastermoe_S") ? 1 : 0;
      back += starts_with(k.name, "fastermoe_R") ? 1 : 0;
    }
    EXPECT_EQ(s, 8) << "GPU " << g;
    EXPECT_EQ(back, 8) << "GPU " << g;
    EXPECT_EQ(test::count_activity(c, g, Activity::Synchronisation), 9) << "GPU " << g;
  }
  EXPECT_EQ(r->system->stats(c)["steps"], 4);
  // Written from fastmoe v1.1.0 (docs/systems/fastermoe.md). NCCL calls: the count exchange +
  // one per step and local expert each way (1 + 2 x 4 x 2). Framework ops: ensure_comm (1);
  // NaiveGate: linear, topk, view, softmax, zeros, .cuda() (6); count_by_gate: zeros,
  // expert_count, long, expert_exchange, cumsum, int, [-1], .item(), empty, assign_pos (10);
  // prepare_forward: view, sum(dim=0), sum, .item(), 3 x .cpu() (7); no_shadow_policy's zeros,
  // torch.div (2); index_select, smart_sch_forward (2); after the schedule: zeros, index_copy_,
  // 2 views, bmm, reshape (6): 34; then per expert_fn call with rows: torch.tensor, GEMM1,
  // activation, GEMM2, copy (5). D2H copies: 2 x .item() + 3 x .cpu(); H2D: the gate's
  // .cuda(); syncs: those 6, the exchange stream, syncTorch, the exit sync.
  for (int g = 0; g < 4; ++g) {
    const gpu::HostOps o = c.host(g).ops();
    int expert_calls = 0;
    for (const auto& k : kernels(c, g)) expert_calls += starts_with(k.name, "fmoe_gemm1") ? 1 : 0;
    EXPECT_EQ(o.nccl_calls, 17u) << "GPU " << g;
    EXPECT_EQ(o.framework_ops, 34u + 5u * static_cast<uint64_t>(expert_calls)) << "GPU " << g;
    EXPECT_EQ(o.d2h_copies, 5u) << "GPU " << g;
    EXPECT_EQ(o.h2d_copies, 1u) << "GPU " << g;
    EXPECT_EQ(o.syncs, 9u) << "GPU " << g;
  }
}

}  // namespace
}  // namespace moehub
