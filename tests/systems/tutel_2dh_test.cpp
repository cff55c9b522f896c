// Tutel's 2D-hierarchical all-to-all (systems.tutel.a2a_algo = 2dh; tutel_2dh.h), written from
// microsoft/tutel 71db950 tutel/impls/communicate.py:38-131 (the groups), 344-363
// (PrimAllToAll2D) and 379-431 (each group's all_to_all).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sanitizer_skip.h"
#include "systems/system_run.h"
#include "systems/tutel/tutel_2dh.h"

namespace moehub {
namespace {

using test::kernels;
using test::run_system;

// Two nodes of two GPUs (LOCAL_SIZE 2) holding 1, 2 | 3, 4 experts, 10 bytes per expert's
// capacity slots (Tutel itself needs equal counts; unequal ones tell the formulas apart).
TEST(Tutel2dh, StepSizesOnTwoNodesOfTwoGpus) {
  const Tutel2dhSteps st = tutel_2dh_steps({1, 2, 3, 4}, 2, 10);
  // Dispatch between nodes: s sends its data-group peer on node m the slots of node m's
  // experts: node 0 holds 1 + 2, node 1 3 + 4. GPU 0's peers are 0 and 2, GPU 1's 1 and 3.
  const PerPair<uint64_t> dispatch_inter{{30, 0, 70, 0}, {0, 30, 0, 70}, {30, 0, 70, 0}, {0, 30, 0, 70}};
  // Inside the node: d's experts' slots from the N = 2 sources routed through the relay.
  const PerPair<uint64_t> dispatch_intra{{20, 40, 0, 0}, {20, 40, 0, 0}, {0, 0, 60, 80}, {0, 0, 60, 80}};
  // Combine between nodes: s's experts' slots for the L = 2 sources on the peer's node.
  const PerPair<uint64_t> combine_inter{{20, 0, 20, 0}, {0, 40, 0, 40}, {60, 0, 60, 0}, {0, 80, 0, 80}};
  // Inside: the slots of local rank r's experts on both nodes: rank 0 has 1 + 3, rank 1 2 + 4.
  const PerPair<uint64_t> combine_intra{{40, 40, 0, 0}, {60, 60, 0, 0}, {0, 0, 40, 40}, {0, 0, 60, 60}};
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(st.dispatch_inter(s, d), dispatch_inter(s, d)) << s << "->" << d;
      EXPECT_EQ(st.dispatch_intra(s, d), dispatch_intra(s, d)) << s << "->" << d;
      EXPECT_EQ(st.combine_inter(s, d), combine_inter(s, d)) << s << "->" << d;
      EXPECT_EQ(st.combine_intra(s, d), combine_intra(s, d)) << s << "->" << d;
    }
  }
  // A row from GPU 0 to GPU 3 goes 0 -> 2 (node 1, local rank 0) -> 3; back from 3 to 0 via 1.
  EXPECT_EQ(tutel_2dh_relay(0, 3, 2), 2);
  EXPECT_EQ(tutel_2dh_relay(3, 0, 2), 1);
  EXPECT_EQ(tutel_2dh_relay(1, 1, 2), 1);
}

// The extension's order (degree > 1, per chunk; custom_kernel.cpp:570-640), same GPUs, experts
// and 10 bytes per expert's chunk.
TEST(Tutel2dh, ExtensionStepSizesOnTwoNodesOfTwoGpus) {
  const Tutel2dhSteps st = tutel_2dh_extension_steps({1, 2, 3, 4}, 2, 10);
  // Dispatch inside the node first: s sends local GPU r the slices of the ranks of r's local
  // rank on both nodes (rank 0: GPUs 0 and 2, 1 + 3 experts; rank 1: 2 + 4).
  const PerPair<uint64_t> dispatch_intra{{40, 60, 0, 0}, {40, 60, 0, 0}, {0, 0, 40, 60}, {0, 0, 40, 60}};
  // Then between nodes: L = 2 slices of d's experts to each GPU d of the same local rank.
  const PerPair<uint64_t> dispatch_inter{{20, 0, 60, 0}, {0, 40, 0, 80}, {20, 0, 60, 0}, {0, 40, 0, 80}};
  // Combine inside: N = 2 slices of s's experts to each local GPU.
  const PerPair<uint64_t> combine_intra{{20, 20, 0, 0}, {40, 40, 0, 0}, {0, 0, 60, 60}, {0, 0, 80, 80}};
  // Between nodes: the slices of every expert on r's node (node 0: 3 experts, node 1: 7).
  const PerPair<uint64_t> combine_inter{{30, 0, 30, 0}, {0, 30, 0, 30}, {70, 0, 70, 0}, {0, 70, 0, 70}};
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(st.dispatch_intra(s, d), dispatch_intra(s, d)) << s << "->" << d;
      EXPECT_EQ(st.dispatch_inter(s, d), dispatch_inter(s, d)) << s << "->" << d;
      EXPECT_EQ(st.combine_intra(s, d), combine_intra(s, d)) << s << "->" << d;
      EXPECT_EQ(st.combine_inter(s, d), combine_inter(s, d)) << s << "->" << d;
    }
  }
  // 0 -> 3 goes via 1 (node 0, local rank 1); 3 -> 0 via 2.
  EXPECT_EQ(tutel_2dh_extension_relay(0, 3, 2), 1);
  EXPECT_EQ(tutel_2dh_extension_relay(3, 0, 2), 2);
  // One node: the intra call alone is the flat all-to-all (d's experts from every source).
  const Tutel2dhSteps one = tutel_2dh_extension_steps({1, 2}, 2, 10);
  EXPECT_EQ(one.dispatch_intra(0, 1), 20u);
  EXPECT_EQ(one.combine_intra(1, 0), 20u);
  EXPECT_EQ(one.dispatch_inter(0, 0), 0u);
}

std::vector<std::string> tutel_two_nodes(std::vector<std::string> more = {}) {
  std::vector<std::string> s{"run.gpus=4", "net.gpus_per_node=2", "net.fidelity=flow", "systems.tutel.a2a_algo=2dh",
                             "systems.tutel.overlap_degree=1", "systems.tutel.capacity_factor=1.0"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

// The exchange's kernels on GPU 0 in issue order: between nodes, inside, the swap, the
// experts, then the combine's permute, between nodes, permute, inside, swap.
TEST(Tutel2dh, IssuesInterThenIntraThenTheSwapAsTheCodeDoes) {
  MOEHUB_SKIP_UNDER_SANITIZERS();  // a kernel-order check; the functional 2dh test runs the path under ASan
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
  MOEHUB_SKIP_UNDER_SANITIZERS();  // an op-count check; the functional 2dh test runs the path under ASan
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

// Functional mode: every kept row reaches its expert through the relay and comes back.
TEST(Tutel2dh, VerifyPassesOnTwoNodesOfTwoGpusAndOnOneNode) {
  for (const char* per_node : {"2", "4"}) {
    auto r = run_system("tutel", tutel_two_nodes({std::string("net.gpus_per_node=") + per_node}), true);
    EXPECT_TRUE(r->functional->passed()) << per_node << ": " << r->functional->report().dump();
  }
}

// Degree 2 on two nodes, GPU 0's kernels: per chunk the contiguous copy, then on the NCCL
// stream stride copy, intra group, stride copy, inter group; the experts; per chunk the same
// four for the combine; the final cat.
TEST(Tutel2dh, ExtensionIssuesIntraThenInterPerChunk) {
  MOEHUB_SKIP_UNDER_SANITIZERS();  // a kernel-order check; the functional 2dh test runs the path under ASan
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
  MOEHUB_SKIP_UNDER_SANITIZERS();  // an op-count check; the functional 2dh test runs the path under ASan
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

TEST(Tutel2dh, ExtensionVerifyPassesAtDegreesTwoAndFour) {
  for (const char* degree : {"2", "4"}) {
    for (const char* per_node : {"2", "4"}) {
      auto r = run_system("tutel",
                          tutel_two_nodes({std::string("systems.tutel.overlap_degree=") + degree,
                                           std::string("net.gpus_per_node=") + per_node}),
                          true);
      EXPECT_TRUE(r->functional->passed()) << degree << " " << per_node << ": " << r->functional->report().dump();
    }
  }
}

}  // namespace
}  // namespace moehub
