// `ideal` (paper II-C): routing, expert computation and scaling only, as if dispatch and
// combine were free and instantaneous. Each GPU routes its own tokens, runs its local experts
// on the rows they receive under expert parallelism (so expert weight traffic and tile counts
// match the real systems), and scales its own tokens. No communication, no synchronisation,
// no extra launches. Under EP+TP (moe/tp_layout.h) each GPU runs its shards of its TP group's
// experts on every row routed to them (all-gathered for free) and scales the k * T partial
// rows of its own tokens.

#include <memory>

#include "platform/moe_system.h"
#include "platform/shared_kernels.h"
#include "systems/ideal/ideal_functional.h"

namespace moehub {
namespace {

class IdealSystem final : public MoeSystem {
 public:
  void start(Cluster& cluster) override {
    SharedKernels k(cluster);
    fn_ = IdealFunctional::make(cluster);
    for (int g = 0; g < cluster.gpus(); ++g) {
      gpu::Stream& s = cluster.stream(g);
      const int64_t tokens = cluster.workload().tokens().count(g);
      k.launch_routing(g, s, tokens);
      const std::vector<uint64_t> rows = k.local_expert_rows(g);
      uint64_t total = 0;
      for (uint64_t r : rows) total += r;
      if (!rows.empty()) {  // an explicit expert map may leave a GPU without experts
        gpu::KernelSpec g1 = k.gemm1_model(rows).kernel("gemm1");
        g1.on_done = [&cluster, g] { cluster.phases(g).gemm1_end = cluster.sim().now(); };
        cluster.launch(g, s, Activity::ExpertCompute, std::move(g1));
        cluster.launch(g, s, Activity::ExpertCompute, k.activation(g, total));
        cluster.launch(g, s, Activity::ExpertCompute, k.gemm2_model(rows).kernel("gemm2"));
      }
      gpu::KernelSpec sc = k.scaling(g, static_cast<uint64_t>(tokens));
      sc.on_done = [this, &cluster, g] {
        fn_->outputs(g);
        cluster.layer_done(g);
      };
      cluster.launch(g, s, Activity::Scaling, std::move(sc));
    }
  }

 private:
  std::unique_ptr<IdealFunctional> fn_;  // does nothing in timing-only runs
};

}  // namespace

SystemEntry ideal_system_entry() {
  SystemEntry e{"ideal", "Routing, expert computation and scaling on local tokens only (paper II-C)", nullptr,
                [](const Config&) -> std::unique_ptr<MoeSystem> { return std::make_unique<IdealSystem>(); }, 24, true};
  // It moves nothing between GPUs: no message is ever in flight.
  e.flow_messages_bound = [](const Config&) -> std::optional<uint64_t> { return 0; };
  return e;
}

}  // namespace moehub
