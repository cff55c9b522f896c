// deepep: DeepEP's normal-mode kernels keep to their SM budget and roles, store one row per
// (token, destination rank), honour the ring flow control, and the datapath verifies.
// Model-level tests (numbers: timing, counts, statistics) split from deepep_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

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


TEST(DeepEp, DispatchAndCombineStayOnTheirSmsWithSendersOnEvenSms) {
  RecordedRun r({"run.gpus=4", "systems.deepep.num_sms=6"}, false);
  const Workload& w = r.run.workload;
  const uint64_t row = static_cast<uint64_t>(w.model().row_bytes());
  for (int g = 0; g < 4; ++g) {
    std::map<std::string, uint64_t> rows;
    for (const auto& s : r.ports[static_cast<size_t>(g)]->stores) {
      if (s.kernel != "deepep_dispatch" && s.kernel != "deepep_combine") continue;
      EXPECT_LT(s.sm, 6u) << s.kernel;
      if (s.bytes >= row) {
        EXPECT_EQ(s.sm % 2, 0u) << s.kernel << ": rows come from sender CTAs";
        ++rows[s.kernel];
      } else if (s.bytes == 4) {
        EXPECT_EQ(s.sm % 2, 1u) << s.kernel << ": head updates come from receiver CTAs";
      }
    }
    // Dispatch stores each token once per rank holding one of its experts; combine returns
    // each received token once.
    uint64_t pairs = 0, received = 0;
    for (int64_t t = w.tokens().begin(g); t < w.tokens().end(g); ++t) {
      std::vector<bool> rank(4, false);
      for (int64_t j = 0; j < w.routing().top_k(); ++j) rank[static_cast<size_t>(w.placement().gpu_of_expert(w.routing().expert(t, j)))] = true;
      for (bool b : rank) pairs += b ? 1 : 0;
    }
    for (int64_t t = 0; t < w.routing().tokens(); ++t) {
      bool here = false;
      for (int64_t j = 0; j < w.routing().top_k(); ++j) here = here || w.placement().gpu_of_expert(w.routing().expert(t, j)) == g;
      received += here ? 1 : 0;
    }
    EXPECT_EQ(rows["deepep_dispatch"], pairs) << "GPU " << g;
    EXPECT_EQ(rows["deepep_combine"], received) << "GPU " << g;
  }
}

// The host blocks on the dispatch counter at most once and on the six count copies of
// Megatron's flex permute path (two in _indices_to_multihot's masked indexings, two in its
// repeat_interleave, two in permute's masked_selects); no expert GEMM starts before the
// dispatch ends or after the combine starts.
TEST(DeepEp, TheHostWaitsOnceOnTheCounterAndNoExpertGemmPrecedesTheDispatch) {
  SystemRun r("deepep", {"run.gpus=4"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(r.cluster->host(g).ops().syncs, 6u) << "GPU " << g;
    EXPECT_LE(r.count(g, Activity::Synchronisation), 1 + 6) << "GPU " << g;
    const PhaseMarks& p = r.cluster->phases(g);
    EXPECT_GE(r.span(g, Activity::ExpertCompute).first, *p.dispatch_end);
    EXPECT_GE(*p.combine_start, r.span(g, Activity::ExpertCompute).second);
  }
}


// ---- internode: two nodes of two GPUs (net.gpus_per_node = 2), flow fidelity ----

std::vector<std::string> two_nodes(std::vector<std::string> more = {}) {
  std::vector<std::string> s{"run.gpus=4", "net.gpus_per_node=2", "net.fidelity=flow"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

// Rows cross nodes only as RDMA puts: every row the dispatch kernel stores goes to a GPU of
// its own node, and a relay stores one row per forwarded item.
TEST(DeepEpInternode, ThreadBlockStoresStayInsideTheNode) {
  RecordedRun r(two_nodes({"systems.deepep.num_sms=4"}), false);
  const DeepEpPlan plan = make_deepep_plan(r.run.workload, 2);
  const DeepEpInternodePlan p = make_deepep_internode_plan(plan, 2, 20);
  const uint64_t row = static_cast<uint64_t>(r.run.workload.model().row_bytes());
  for (int q = 0; q < 4; ++q) {
    uint64_t rows = 0, want = 0;
    for (const auto& s : r.ports[static_cast<size_t>(q)]->stores) {
      if (s.kernel != "deepep_internode_dispatch" && s.kernel != "deepep_internode_combine") continue;
      EXPECT_EQ(static_cast<int>(s.dst) / 2, q / 2) << s.kernel << " from GPU " << q;
      if (s.kernel == "deepep_internode_dispatch" && s.bytes >= row) {
        EXPECT_EQ(s.sm % 2, 0u) << "dispatch forwarders run on even CTAs";
        ++rows;
      }
    }
    for (int c = 0; c < 2; ++c) {
      for (int l = 0; l < 2; ++l) want += p.fwd(q, c).items[static_cast<size_t>(l)].size();
    }
    EXPECT_EQ(rows, want) << "GPU " << q;
  }
}

// ---- low-latency kernels (systems.deepep.mode = "low-latency") ----

}  // namespace
}  // namespace moehub
