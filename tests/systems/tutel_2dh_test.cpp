// Tutel's 2D-hierarchical all-to-all (systems.tutel.a2a_algo = 2dh; tutel_2dh.h), written from
// microsoft/tutel 71db950 tutel/impls/communicate.py:38-131 (the groups), 344-363
// (PrimAllToAll2D) and 379-431 (each group's all_to_all).
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

// Functional mode: every kept row reaches its expert through the relay and comes back.
TEST(Tutel2dh, VerifyPassesOnTwoNodesOfTwoGpusAndOnOneNode) {
  for (const char* per_node : {"2", "4"}) {
    auto r = run_system("tutel", tutel_two_nodes({std::string("net.gpus_per_node=") + per_node}), true);
    EXPECT_TRUE(r->functional->passed()) << per_node << ": " << r->functional->report().dump();
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
