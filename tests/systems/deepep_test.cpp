// deepep: DeepEP's normal-mode kernels keep to their SM budget and roles, store one row per
// (token, destination rank), honour the ring flow control, and the datapath verifies.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "platform/network_store_port.h"
#include "systems/deepep/deepep_internode_plan.h"
#include "systems/deepep/deepep_low_latency.h"
#include "systems/deepep/deepep_plan.h"
#include "sim/error.h"
#include "systems/system_run.h"
#include "systems/deepep_recording.h"

namespace moehub {
namespace {

using test::SystemRun;

using test::RecordedRun;
using test::RecordingPort;


TEST(DeepEp, VerifyPasses) {
  SystemRun r("deepep", {});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}

TEST(DeepEp, VerifyPassesWithSkewAndAGpuWithoutExperts) {
  SystemRun r("deepep", {"run.gpus=4", "workload.imbalance_std=0.05", "workload.expert_map=[0,0,0,1,1,2,2,1]"});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}

// EP+TP through Megatron's flex dispatcher (token_dispatcher.py _initialize_metadata): with
// top-1 routing on 4 GPUs at TP 2, token t reaches exactly the two TP ranks of its expert's EP
// rank (GPUs 2q and 2q + 1, q = expert / 4 of 8 experts), and each GPU issues two kernels and
// two framework ops more than at TP 1 (the routing map's and the probs' expansion copies),
// plus two CPU adds in Python's sum over tokens_per_expert (E / EP local experts: 4, not 2).
TEST(DeepEp, UnderTpEachTokenReachesEveryTpRankOfItsExpert) {
  SystemRun tp1("deepep", {"run.gpus=4", "model.top_k=1"}, false);
  SystemRun tp2("deepep", {"run.gpus=4", "model.top_k=1", "parallel.tp=2"}, false);
  const DeepEpPlan plan = make_deepep_plan(tp2.workload, 1);
  const Routing& logical = tp2.workload.logical_routing();
  std::vector<std::vector<int>> reached(static_cast<size_t>(logical.tokens()));
  for (int d = 0; d < 4; ++d) {
    for (int64_t t : plan.recv_token[static_cast<size_t>(d)]) reached[static_cast<size_t>(t)].push_back(d);
  }
  for (int64_t t = 0; t < logical.tokens(); ++t) {
    const int q = logical.expert(t, 0) / 4;
    EXPECT_EQ(reached[static_cast<size_t>(t)], (std::vector<int>{2 * q, 2 * q + 1})) << "token " << t;
  }
  tp1.run();
  tp2.run();
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(tp2.cluster->host(g).ops().kernels, tp1.cluster->host(g).ops().kernels + 2) << "GPU " << g;
    EXPECT_EQ(tp2.cluster->host(g).ops().framework_ops, tp1.cluster->host(g).ops().framework_ops + 2 + 2) << "GPU " << g;
  }
}

// Host-only work written from the code (docs/research/opcount-flashmoe.md section 3): the
// caching-allocator allocations of get_dispatch_layout (3), before notify_dispatch (2), after
// the host spin (6) and in the combine (1); FusedDispatch.apply and FusedCombine.apply. They
// add exactly their cost to the host's busy time.
TEST(DeepEp, HostOnlyOpsAsTheCodeIssuesThem) {
  SystemRun with("deepep", {"run.gpus=4", "model.top_k=1", "host.alloc_cost=1us", "host.autograd_function_cost=10us"}, false);
  SystemRun without("deepep", {"run.gpus=4", "model.top_k=1", "host.alloc_cost=0us", "host.autograd_function_cost=0us"}, false);
  with.run();
  without.run();
  for (int g = 0; g < 4; ++g) {
    const gpu::HostOps o = with.cluster->host(g).ops();
    EXPECT_EQ(o.allocations, 3u + 2u + 6u + 1u) << "GPU " << g;
    EXPECT_EQ(o.autograd_functions, 2u) << "GPU " << g;
    EXPECT_EQ(o.busy - without.cluster->host(g).ops().busy, Time::from_us(12 * 1 + 2 * 10)) << "GPU " << g;
  }
}

TEST(DeepEp, ARingOfOneChunkStillDeliversEverythingButSlower) {
  SystemRun wide("deepep", {"run.tokens=2048"}, false);
  SystemRun narrow("deepep", {"run.tokens=2048", "systems.deepep.dispatch_ring_tokens=6"});
  wide.run();
  narrow.run();
  EXPECT_TRUE(narrow.functional->passed()) << narrow.functional->report().dump(2);
  const PhaseMarks& a = wide.cluster->phases(0);
  const PhaseMarks& b = narrow.cluster->phases(0);
  EXPECT_GT(*b.dispatch_end - *b.dispatch_start, *a.dispatch_end - *a.dispatch_start);
}

// Megatron-LM 0014f13 get_permuted_hidden_states_by_experts, counted by hand. With 64 tokens
// on 4 GPUs (top-2 of 8 experts, 2 per GPU) every mask has at most 64 x 2 entries, under one
// CUB reduce tile, so each masked indexing is 5 kernels (count, select init, select,
// write_indices, index) and 1 D2H. _indices_to_multihot: zeros, zeros, `!= -1`, indices[mask],
// arange, sum, repeat_interleave (scan init, scan, `>= 0`, all, compute, index_select),
// index_put, probs[mask], index_put, bool: 3 + 5 + 2 + 6 + 1 + 5 + 2 = 24 kernels, 4 D2H.
// permute: map copy, arange, masked_select, row gather, probs copy, masked_select: 14, 2 D2H.
TEST(DeepEp, FlexPermuteIssuesMegatronsMultihotAndMaskedSelectOps) {
  SystemRun r("deepep", {"run.gpus=4", "run.tokens=64", "model.experts=8", "model.top_k=2"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) {
    uint64_t multihot = 0, permute = 0;
    for (const auto& k : test::kernels(*r.cluster, g)) {
      multihot += k.name.rfind("multihot_", 0) == 0 ? 1 : 0;
      permute += k.name.rfind("permute1_", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(multihot, 24u) << "GPU " << g;
    EXPECT_EQ(permute, 14u) << "GPU " << g;
    EXPECT_EQ(r.cluster->host(g).ops().d2h_copies, 6u) << "GPU " << g;
  }
}

TEST(DeepEp, SixteenRanksWithGpusWithoutExpertsStillVerify) {
  SystemRun r("deepep", {"run.gpus=16", "run.tokens=256", "workload.expert_map=[0,2,4,6,8,10,12,14]"});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}


// ---- internode: two nodes of two GPUs (net.gpus_per_node = 2), flow fidelity ----

std::vector<std::string> two_nodes(std::vector<std::string> more = {}) {
  std::vector<std::string> s{"run.gpus=4", "net.gpus_per_node=2", "net.fidelity=flow"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

TEST(DeepEpInternode, VerifyPassesOnTwoNodesOfTwoGpus) {
  SystemRun r("deepep", two_nodes());
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
  EXPECT_TRUE(r.stats.contains("deepep_dispatch_rdma_GBps")) << r.stats.dump();
  // internode_dispatch's allocations (deep_ep.cpp 2be0d4f8: layout 4 with the RDMA-rank
  // counts, :981-984 4 before the notify, :1048-1070 8 after the spin, :1306 1 in the combine).
  for (int g = 0; g < r.cluster->gpus(); ++g) EXPECT_EQ(r.cluster->host(g).ops().allocations, 4u + 4u + 8u + 1u) << "GPU " << g;
}

// GPU g is (node g / 2, local rank g % 2). A token of GPU 1 (node 0, rank 1) bound for GPU 2
// (node 1, rank 0) crosses to GPU 3 (node 1, rank 1: the same rail) and GPU 3 forwards it to
// GPU 2 over NVLink; every token crosses once per node, whatever number of its GPUs there.
TEST(DeepEpInternode, EachTokenCrossesOncePerNodeToItsRailAndIsForwardedThere) {
  SystemRun r("deepep", two_nodes(), false);
  const DeepEpPlan plan = make_deepep_plan(r.workload, 2);
  const DeepEpInternodePlan p = make_deepep_internode_plan(plan, 2, 20);
  EXPECT_EQ(p.gpu(1, p.local(1)), 3);
  EXPECT_EQ(p.gpu(p.node(0), p.local(3)), 1);
  for (int s = 0; s < 4; ++s) {
    for (int c = 0; c < 2; ++c) {
      for (int node = 0; node < 2; ++node) {
        std::vector<int64_t> want;  // s's tokens of channel c with a GPU of `node` among theirs
        for (int l = 0; l < 2; ++l) {
          for (int64_t t : plan.send(s, p.gpu(node, l))[static_cast<size_t>(c)]) want.push_back(t);
        }
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        EXPECT_EQ(p.stream(s, node, c).token, want) << "GPU " << s << " channel " << c << " node " << node;
        // The relay of (s, node) forwards exactly s's tokens for each GPU of that node.
        const int relay = p.gpu(node, p.local(s));
        for (int l = 0; l < 2; ++l) {
          std::vector<int64_t> got;
          for (const auto& it : p.fwd(relay, c).items[static_cast<size_t>(l)]) {
            if (it.src == s) got.push_back(plan.send(s, p.gpu(node, l))[static_cast<size_t>(c)][static_cast<size_t>(it.index)]);
          }
          EXPECT_EQ(got, plan.send(s, p.gpu(node, l))[static_cast<size_t>(c)]) << "relay " << relay << " to rank " << l;
        }
      }
    }
  }
}

// With a slow NIC the dispatch is bound by the busiest NIC: each GPU's puts to its rail peer
// carry its tokens for the other node, (row + SourceMeta 8 + top-k x 8 bytes, 16-aligned) plus
// an 8-byte tail atomic per put, and 26 header bytes per 4 KiB packet; at 0.1 GB/s that wire
// time dominates the layer's latencies (a few us). The last put's packet is serialised once
// more after it has left (docs/network.md: a transfer completes one packet's serialisation
// after its payload has left), and the relay's head atomics (34 wire bytes each, one per
// chunk) share its NIC with its own puts.
TEST(DeepEpInternode, ASlowNicBoundsTheDispatchByItsBusiestRail) {
  const double bw = 0.1e9;
  SystemRun r("deepep", two_nodes({"net.nic_bandwidth=0.1GB/s"}), false);
  r.run();
  const DeepEpPlan plan = make_deepep_plan(r.workload, 10);
  const DeepEpInternodePlan p = make_deepep_internode_plan(plan, 2, 20);
  const ModelShape& m = r.workload.model();
  const uint64_t tb = (static_cast<uint64_t>(m.row_bytes()) + 8 + static_cast<uint64_t>(m.top_k()) * 8 + 15) / 16 * 16;
  // Per GPU: the wire bytes of its puts over the other node's rail, and its put count.
  std::vector<double> wire(4, 0.0), puts(4, 0.0);
  double last_packet = 0;
  for (int s = 0; s < 4; ++s) {
    for (int c = 0; c < 10; ++c) {
      const int64_t t = p.stream(s, 1 - p.node(s), c).size();
      if (t == 0) continue;
      const double n = static_cast<double>((t + 19) / 20);
      const double payload = static_cast<double>(t * static_cast<int64_t>(tb)) + 8.0 * n;
      wire[s] += payload + 26.0 * n * std::ceil(payload / n / 4096.0);
      puts[s] += n;
      last_packet = std::max(last_packet, std::min(4096.0, payload / n) + 26.0);
    }
  }
  double worst = 0;
  for (int s = 0; s < 4; ++s) {
    const int peer = p.gpu(1 - p.node(s), p.local(s));
    worst = std::max(worst, (wire[s] + 34.0 * puts[peer]) / bw);  // its puts, its heads for the peer's
  }
  Time first = Time::max(), last = Time::zero();
  for (int g = 0; g < 4; ++g) {
    first = std::min(first, *r.cluster->phases(g).dispatch_start);
    last = std::max(last, *r.cluster->phases(g).dispatch_end);
  }
  const double span = (last - first).seconds();
  EXPECT_GT(worst, 20e-6);  // the bound is the wire time, not latency
  EXPECT_GE(span, worst);
  EXPECT_LE(span, (worst + last_packet / bw) * 1.02 + 5e-6);
}

TEST(DeepEpInternode, RingsThatCouldDeadlockAreRefusedBeforeTheyRun) {
  // Combine on 2 nodes: 26 slots give each node 13, less than the 12-token RDMA chunk plus the
  // 4-token NVLink chunk less one (and than DeepEP's 12 forwarder warps per node plus 4);
  // 27 is not a multiple of the node count; a dispatch ring under two NVLink chunks (36).
  for (const char* bad : {"systems.deepep.internode_combine_nvl_ring_tokens=26",
                          "systems.deepep.internode_combine_nvl_ring_tokens=27",
                          "systems.deepep.internode_dispatch_nvl_ring_tokens=71"}) {
    EXPECT_THROW(SystemRun("deepep", two_nodes({bad}), false).run(), UserError) << bad;
  }
  SystemRun ok("deepep", two_nodes({"systems.deepep.internode_combine_nvl_ring_tokens=34"}), false);
  EXPECT_NO_THROW(ok.run());  // 17 per node: above 12 + 4 - 1
}

// ---- low-latency kernels (systems.deepep.mode = "low-latency") ----

std::vector<std::string> ll(std::vector<std::string> more = {}) {
  std::vector<std::string> s{"systems.deepep.mode=low-latency", "run.gpus=2"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

TEST(DeepEpLowLatency, VerifyPassesOnOneNodeAndOnTwoNodes) {
  SystemRun one("deepep", ll());
  one.run();
  EXPECT_TRUE(one.functional->passed()) << one.functional->report().dump(2);
  EXPECT_TRUE(one.stats.contains("deepep_ll_dispatch_us")) << one.stats.dump();
  SystemRun two("deepep", ll({"net.gpus_per_node=1", "net.fidelity=flow"}));
  two.run();
  EXPECT_TRUE(two.functional->passed()) << two.functional->report().dump(2);
}

// internode_ll.cu:495-501, :1168-1175: 288 experts on 132 SMs are 3 groups of 10 warps on 96
// CTAs (dispatch); combine takes max(96, ceil(128 / ceil(128 / 132))) = 128 CTAs for 128 tokens.
TEST(DeepEpLowLatency, LaunchGeometryFollowsTheHostWrappers) {
  const LlGrid g = DeepEpLowLatency::grid(288, 128, 132);
  EXPECT_EQ(g.groups, 3u);
  EXPECT_EQ(g.warps_per_group, 10u);
  EXPECT_EQ(g.threads(), 960u);
  EXPECT_EQ(g.dispatch_sms, 96u);
  EXPECT_EQ(g.combine_sms, 128u);
  const LlGrid v3 = DeepEpLowLatency::grid(256, 64, 132);
  EXPECT_EQ(v3.groups, 2u);
  EXPECT_EQ(v3.dispatch_sms, 128u);
  EXPECT_EQ(v3.combine_sms, 128u);
}

// Two GPUs of one node, Mixtral's 8 experts (4 per GPU), top-2, hidden 64 (verify shapes), FP8:
// a message is 16 + 64 + 64 / 128 rounded up x 4 = 84 bytes. GPU g stores one message per
// (token, slot) whose expert is on the other GPU and one 4-byte count per expert there (also
// for experts it sends nothing); the combine stores one 128-byte BF16 row per row it took from
// the other GPU and one 4-byte flag per local expert.
TEST(DeepEpLowLatency, OneStorePerMessageAndOneCountPerExpert) {
  RecordedRun r(ll(), false);
  const DeepEpLlPlan p = make_deepep_ll_plan(r.run.workload, 128);
  ASSERT_EQ(p.local, 4);
  for (int g = 0; g < 2; ++g) {
    const int other = 1 - g;
    uint64_t to_other = 0, from_other = 0;
    for (const auto& m : p.msgs[g]) to_other += p.rank_of(m.expert) == other ? 1 : 0;
    for (const auto& m : p.msgs[other]) from_other += p.rank_of(m.expert) == g ? 1 : 0;
    std::map<std::pair<std::string, uint64_t>, uint64_t> seen;
    for (const auto& s : r.ports[static_cast<size_t>(g)]->stores) {
      EXPECT_EQ(static_cast<int>(s.dst), other);
      ++seen[{s.kernel, s.bytes}];
    }
    EXPECT_EQ((seen[{"deepep_ll_dispatch", 84}]), to_other) << "GPU " << g;
    EXPECT_EQ((seen[{"deepep_ll_dispatch", 4}]), 4u) << "GPU " << g;
    EXPECT_EQ((seen[{"deepep_ll_combine", 128}]), from_other) << "GPU " << g;
    EXPECT_EQ((seen[{"deepep_ll_combine", 4}]), 4u) << "GPU " << g;
    EXPECT_EQ(seen.size(), 4u);
  }
}

// Two nodes of one GPU at flow fidelity and a 0.1 GB/s NIC: every message to the other GPU is
// an RDMA put of 84 bytes (26 header bytes on the wire) and every count an atomic of 4 (+ 26):
// the dispatch kernel of the later GPU ends once the busier direction's wire time has passed,
// plus at most one message's serialisation after its payload left and a few microseconds of
// latency and copies.
TEST(DeepEpLowLatency, ASlowNicBoundsTheDispatchByItsWireBytes) {
  const double bw = 0.1e9;
  SystemRun r("deepep", ll({"net.gpus_per_node=1", "net.fidelity=flow", "net.nic_bandwidth=0.1GB/s"}), false);
  r.run();
  const DeepEpLlPlan p = make_deepep_ll_plan(r.workload, 128);
  double worst = 0;
  for (int g = 0; g < 2; ++g) {
    double wire = 4 * (4.0 + 26.0);  // a count per expert of the other GPU
    for (const auto& m : p.msgs[g]) wire += p.rank_of(m.expert) != g ? 84.0 + 26.0 : 0.0;
    worst = std::max(worst, wire / bw);
  }
  Time first = Time::max(), last = Time::zero();
  for (int g = 0; g < 2; ++g) {
    first = std::min(first, *r.cluster->phases(g).dispatch_start);
    last = std::max(last, *r.cluster->phases(g).dispatch_end);
  }
  const double span = (last - first).seconds();
  EXPECT_GT(worst, 100e-6);  // 128 tokens x 2 slots, about half remote: the wire time dominates
  EXPECT_GE(span, worst);
  EXPECT_LE(span, worst + 110.0 / bw + 5e-6);
}

// The kernels' signals count one layer up from zero and are never cleared (DeepEP clears its
// counters for the next launch, internode_ll.cu:343-350): a second dispatch or combine on a GPU
// is refused, each kernel once per GPU is fine. moehub runs one layer per run (layer_done).
TEST(DeepEpLowLatency, ASecondLayerOnTheSameSignalsIsRefused) {
  SystemRun r("deepep", ll(), false);
  const DeepEpLlPlan p = make_deepep_ll_plan(r.workload, 128);
  LlKernelConfig k;
  k.row_bytes = 128;
  k.msg_bytes = 84;
  k.recv_row_bytes = 72;
  DeepEpLowLatency kernels(*r.cluster, p, k, {});
  EXPECT_NO_THROW(kernels.dispatch(0));
  EXPECT_NO_THROW(kernels.combine(0));
  EXPECT_NO_THROW(kernels.dispatch(1));
  EXPECT_THROW(kernels.dispatch(0), std::logic_error);
  EXPECT_THROW(kernels.combine(0), std::logic_error);
  EXPECT_NO_THROW(kernels.combine(1));
  EXPECT_THROW(kernels.dispatch(1), std::logic_error);
}

TEST(DeepEpLowLatency, WhatDeepEpRefusesIsRefusedBeforeItRuns) {
  // 256 tokens on one GPU: 256 tokens to dispatch against 128 receive slots.
  EXPECT_THROW(SystemRun("deepep", ll({"run.gpus=1"}), false).run(), UserError);
  // 8 experts on 3 GPUs: not a multiple.
  EXPECT_THROW(SystemRun("deepep", ll({"run.gpus=3", "run.tokens=96"}), false).run(), UserError);
  EXPECT_NO_THROW(SystemRun("deepep", ll({"run.gpus=1", "systems.deepep.ll_max_dispatch_tokens_per_rank=256"}), false).run());
}

}  // namespace
}  // namespace moehub
