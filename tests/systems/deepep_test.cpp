// deepep: DeepEP's normal-mode kernels keep to their SM budget and roles, store one row per
// (token, destination rank), honour the ring flow control, and the datapath verifies.

#include <gtest/gtest.h>

#include <map>

#include "platform/network_store_port.h"
#include "systems/deepep/deepep_plan.h"
#include "sanitizer_skip.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

// Records every store of a GPU, then hands it to the ordinary port.
class RecordingPort final : public gpu::StorePort {
 public:
  RecordingPort(Cluster& c, int g) : cluster_(c), gpu_(g), inner_(c, g) {}
  bool try_store(const gpu::StoreRequest& s, Callback retry) override {
    const bool ok = inner_.try_store(s, std::move(retry));
    if (ok) stores.push_back({cluster_.gpu(gpu_).kernel_times(s.kernel).name, s.sm, s.bytes, s.dst_gpu});
    return ok;
  }
  struct Seen {
    std::string kernel;
    uint32_t sm;
    uint64_t bytes;
    uint32_t dst;
  };
  std::vector<Seen> stores;

 private:
  Cluster& cluster_;
  int gpu_;
  NetworkStorePort inner_;
};

struct RecordedRun {
  SystemRun run;
  std::vector<std::unique_ptr<RecordingPort>> ports;
  RecordedRun(std::vector<std::string> set, bool data) : run("deepep", std::move(set), data) {
    for (int g = 0; g < run.cluster->gpus(); ++g) {
      ports.push_back(std::make_unique<RecordingPort>(*run.cluster, g));
      run.cluster->set_store_port(g, ports.back().get());
    }
    run.run();
  }
};

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
// two framework ops more than at TP 1 (the routing map's and the probs' expansion copies).
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
    EXPECT_EQ(tp2.cluster->host(g).ops().framework_ops, tp1.cluster->host(g).ops().framework_ops + 2) << "GPU " << g;
  }
}

TEST(DeepEp, DispatchAndCombineStayOnTheirSmsWithSendersOnEvenSms) {
  MOEHUB_SKIP_UNDER_SANITIZERS();  // an SM-placement check; VerifyPasses runs the path under ASan
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

TEST(DeepEp, TheHostWaitsOnceAndNoExpertGemmPrecedesTheDispatch) {
  MOEHUB_SKIP_UNDER_SANITIZERS();  // an ordering check; VerifyPasses runs the path under ASan
  SystemRun r("deepep", {"run.gpus=4"}, false);
  r.run();
  for (int g = 0; g < 4; ++g) {
    EXPECT_LE(r.count(g, Activity::Synchronisation), 1) << "GPU " << g;
    const PhaseMarks& p = r.cluster->phases(g);
    EXPECT_GE(r.span(g, Activity::ExpertCompute).first, *p.dispatch_end);
    EXPECT_GE(*p.combine_start, r.span(g, Activity::ExpertCompute).second);
  }
}

TEST(DeepEp, SixteenRanksWithGpusWithoutExpertsStillVerify) {
  SystemRun r("deepep", {"run.gpus=16", "run.tokens=256", "workload.expert_map=[0,2,4,6,8,10,12,14]"});
  r.run();
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump(2);
}

}  // namespace
}  // namespace moehub
