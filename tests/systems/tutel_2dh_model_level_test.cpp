// Tutel's 2D-hierarchical all-to-all (systems.tutel.a2a_algo = 2dh; tutel_2dh.h), written from
// microsoft/tutel 71db950 tutel/impls/communicate.py:38-131 (the groups), 344-363
// (PrimAllToAll2D) and 379-431 (each group's all_to_all).
// Model-level tests (numbers: timing, counts, statistics) split from tutel_2dh_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "systems/system_run.h"
#include "systems/tutel/tutel_2dh.h"

namespace moehub {
namespace {

using test::kernels;
using test::run_system;

std::vector<std::string> tutel_two_nodes(std::vector<std::string> more = {}) {
  std::vector<std::string> s{"run.gpus=4", "net.gpus_per_node=2", "net.fidelity=flow", "systems.tutel.a2a_algo=2dh",
                             "systems.tutel.overlap_degree=1", "systems.tutel.capacity_factor=1.0"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

// The exchange's kernels on GPU 0 in issue order: between nodes, inside, the swap, the
// experts, then the combine's permute, between nodes, permute, inside, swap.
TEST(Tutel2dh, IssuesInterThenIntraThenTheSwapAsTheCodeDoes) {
  auto r = run_system("tutel", tutel_two_nodes());
  std::vector<std::string> exchange;
  for (const auto& k : kernels(*r->cluster, 0)) {
    if (k.name.find("2dh") != std::string::npos || k.name == "tutel_gemm1") exchange.push_back(k.name);
  }
  const std::vector<std::string> expected{
      "tutel_a2a_2dh_inter_scatter_0", "tutel_2dh_inter_permute",      "tutel_a2a_2dh_intra_scatter_0",
      "tutel_2dh_intra_permute",       "tutel_2dh_swapaxes",           "tutel_gemm1",
      "tutel_2dh_combine_permute",     "tutel_a2a_2dh_inter_gather_0", "tutel_2dh_combine_permute",
      "tutel_a2a_2dh_intra_gather_0",  "tutel_2dh_swapaxes"};
  EXPECT_EQ(exchange, expected);
  // Every GPU's intra-node scatter starts only after its inter-node scatter has ended.
  for (int g = 0; g < 4; ++g) {
    std::optional<Time> inter_end, intra_start;
    for (const auto& k : kernels(*r->cluster, g)) {
      if (k.name == "tutel_a2a_2dh_inter_scatter_0") inter_end = k.ended;
      if (k.name == "tutel_a2a_2dh_intra_scatter_0") intra_start = k.started;
    }
    ASSERT_TRUE(inter_end && intra_start) << "GPU " << g;
    EXPECT_LE(*inter_end, *intra_start) << "GPU " << g;
  }
  EXPECT_EQ(r->system->stats(*r->cluster)["a2a_algo"], "2dh");
}

// Against linear on the same run: the dispatch adds PrimAllToAll2D.apply, a second group's
// contiguous, all_to_all_single (empty_like, the call, wait, RestoreBackward.apply), permute
// copy (view, permute, contiguous) and view (9), and the swap (view, swapaxes, contiguous,
// view: 4): 14 ops; the combine adds apply, a second group's permute copy (3), call (4) and
// view, and the swap: 13. Kernels: 2 + 2 copies, 2 NCCL calls; events: 4 per call.
TEST(Tutel2dh, HostOpsPerStepAsTheCodeIssuesThem) {
  auto two = run_system("tutel", tutel_two_nodes());
  auto lin = run_system("tutel", tutel_two_nodes({"systems.tutel.a2a_algo=linear"}));
  // One node of four GPUs: no inter-node call (the data group has one rank) and the swap's
  // contiguous copies nothing (its swapped axis has size 1): per direction apply, view,
  // swapaxes, contiguous, view = 5 ops more than linear, no kernels, calls or events.
  auto one = run_system("tutel", tutel_two_nodes({"net.gpus_per_node=4"}));
  auto one_lin = run_system("tutel", tutel_two_nodes({"net.gpus_per_node=4", "systems.tutel.a2a_algo=linear"}));
  for (int g = 0; g < 4; ++g) {
    const gpu::HostOps t = two->cluster->host(g).ops(), l = lin->cluster->host(g).ops();
    EXPECT_EQ(t.framework_ops, l.framework_ops + 27) << "GPU " << g;
    EXPECT_EQ(t.kernels, l.kernels + 6) << "GPU " << g;
    EXPECT_EQ(t.nccl_calls, l.nccl_calls + 2) << "GPU " << g;
    EXPECT_EQ(t.events, l.events + 8) << "GPU " << g;
    const gpu::HostOps o = one->cluster->host(g).ops(), ol = one_lin->cluster->host(g).ops();
    EXPECT_EQ(o.framework_ops, ol.framework_ops + 10) << "GPU " << g;
    EXPECT_EQ(o.kernels, ol.kernels) << "GPU " << g;
    EXPECT_EQ(o.nccl_calls, ol.nccl_calls) << "GPU " << g;
    EXPECT_EQ(o.events, ol.events) << "GPU " << g;
  }
}

// Degree 2 on two nodes, GPU 0's kernels: per chunk the contiguous copy, then on the NCCL
// stream stride copy, intra group, stride copy, inter group; the experts; per chunk the same
// four for the combine; the final cat.
TEST(Tutel2dh, ExtensionIssuesIntraThenInterPerChunk) {
  auto r = run_system("tutel", tutel_two_nodes({"systems.tutel.overlap_degree=2"}));
  std::vector<std::string> names;
  for (const auto& k : kernels(*r->cluster, 0)) {
    if (k.name.find("2dh") != std::string::npos) names.push_back(k.name);
  }
  const std::vector<std::string> chunk0{"tutel_2dh_chunk_contiguous", "tutel_2dh_stride_copy",
                                        "tutel_a2a_2dh_intra_scatter_0", "tutel_2dh_stride_copy",
                                        "tutel_a2a_2dh_inter_scatter_0"};
  ASSERT_EQ(names.size(), 2 * 5 + 2 * 4 + 1u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 5), chunk0);
  EXPECT_EQ(names[9], "tutel_a2a_2dh_inter_scatter_1");
  EXPECT_EQ(names[11], "tutel_a2a_2dh_intra_gather_0");
  EXPECT_EQ(names[17], "tutel_a2a_2dh_inter_gather_1");
  EXPECT_EQ(names[18], "tutel_2dh_cat");
}

// Against linear at degree 2 (5 + 21d ops, 9d kernels, 2d NCCL calls, 4d + 4 events): 2dh
// issues split (1); per chunk CurrentStreamRelease (apply, contiguous: a copy),
// NcclStreamAcquire, AllToAll2DAsync, NcclStreamRelease (5); the same 21 per chunk around the
// experts; per chunk NcclStreamAcquire, AllToAll2DAsync, NcclStreamRelease,
// CurrentStreamAcquire (4); cat (1): 2 + 30d = 62, 15 more. Kernels per chunk: the copy, 2 x
// (2 stride copies + 2 NCCL groups), 7 around the experts; and the cat: 16d + 1 = 33, 15 more;
// NCCL calls 4d, 4 more; events per chunk 3 + 2 + 3 = 8: 16, 4 more. One node: no stride
// copies, one group per direction: kernels 10d + 1 = 21 (3 more), NCCL calls as linear.
TEST(Tutel2dh, ExtensionHostOpsAsTheCodeIssuesThem) {
  const std::vector<std::string> d2{"systems.tutel.overlap_degree=2"};
  auto two = run_system("tutel", tutel_two_nodes(d2));
  auto lin = run_system("tutel", tutel_two_nodes({"systems.tutel.overlap_degree=2", "systems.tutel.a2a_algo=linear"}));
  auto one = run_system("tutel", tutel_two_nodes({"systems.tutel.overlap_degree=2", "net.gpus_per_node=4"}));
  for (int g = 0; g < 4; ++g) {
    const gpu::HostOps t = two->cluster->host(g).ops(), l = lin->cluster->host(g).ops(), o = one->cluster->host(g).ops();
    EXPECT_EQ(t.framework_ops, l.framework_ops + 15) << "GPU " << g;
    EXPECT_EQ(t.kernels, l.kernels + 15) << "GPU " << g;
    EXPECT_EQ(t.nccl_calls, l.nccl_calls + 4) << "GPU " << g;
    EXPECT_EQ(t.events, l.events + 4) << "GPU " << g;
    EXPECT_EQ(o.framework_ops, l.framework_ops + 15) << "GPU " << g;
    EXPECT_EQ(o.kernels, l.kernels + 3) << "GPU " << g;
    EXPECT_EQ(o.nccl_calls, l.nccl_calls) << "GPU " << g;
  }
}

}  // namespace
}  // namespace moehub
