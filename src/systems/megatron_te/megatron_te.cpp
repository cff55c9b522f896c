// `megatron-te`: Megatron-Core's MoEAlltoAllTokenDispatcher (dropless, unfused permutes) with
// Transformer Engine grouped GEMM experts, no overlap, every step a launch on the compute
// stream (docs/research/systems.md section 1; docs/systems.md). Per GPU:
//   routing; per-expert counts (routing_map.sum(0)); NCCL all-gather of the [E] counts; split
//   sizes; D2H copies of the split sizes on a side stream; permutation 1 (argsort, token ids,
//   probs gather, row gather); host blocks on the copies; NCCL all-to-all of the rows and of
//   the probs with those splits; sort_chunks_by_idxs (source-major -> expert-major, rows and
//   probs); GEMM1, activation (probs applied here, as the fused weighted SwiGLU of the current
//   code does), GEMM2; unsort; NCCL all-to-all back; unpermute (zeros + scatter_add, a pure sum
//   of each token's k rows).

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <vector>

#include "config/param_table.h"
#include "gpu/host.h"
#include "platform/megatron_permute.h"
#include "platform/megatron_router.h"
#include "platform/moe_system.h"
#include "platform/nccl_group_call.h"
#include "platform/nccl_ring_all_gather.h"
#include "platform/shared_kernels.h"
#include "systems/megatron_te/megatron_te_functional.h"

namespace moehub {
namespace {

namespace mp = megatron_permute;

struct MegatronParams {
  NcclKernelShape nccl;
  uint32_t te_gemm_streams = 0;
  static ParamTable<MegatronParams> table() {
    ParamTable<MegatronParams> t;
    t.integer("systems.megatron-te.nccl_cta_threads", [](MegatronParams& p) -> uint32_t& { return p.nccl.threads; },
              "Threads per NCCL CTA")
        .at_least(32)
        .at_most(1024);
    t.integer("systems.megatron-te.te_gemm_streams", &MegatronParams::te_gemm_streams,
              "Compute streams Transformer Engine's grouped linear spreads its per-expert cuBLAS GEMMs over")
        .at_least(1)
        .at_most(64);
    return t;
  }
  static MegatronParams from(const Config& c) {
    MegatronParams p;
    table().read(c, p);
    return p;
  }
};

void declare_megatron_params(ParamRegistry& r) { MegatronParams::table().declare(r); }

class MegatronTeSystem final : public MoeSystem {
 public:
  explicit MegatronTeSystem(MegatronParams p) : p_(p) {}

  void start(Cluster& cluster) override {
    c_ = &cluster;
    k_ = std::make_unique<SharedKernels>(cluster);
    const int n = cluster.gpus();
    const Workload& w = cluster.workload();
    const uint64_t row_bytes = static_cast<uint64_t>(w.model().row_bytes());
    for (int g = 0; g < n; ++g) layouts_.push_back(make_megatron_layout(w, g));
    fn_ = MegatronTeFunctional::make(cluster, layouts_);

    PerPair<uint64_t> rows(n), probs(n);
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        const uint64_t r = static_cast<uint64_t>(w.plan().rows(s, d));
        rows(s, d) = r * row_bytes;
        probs(s, d) = r * mp::kProbBytes;
      }
    }
    for (int g = 0; g < n; ++g) {
      gpu::Gpu& gp = cluster.gpu(g);
      counts_done_.push_back(gp.create_signal("allgather counts done"));
      std::vector<gpu::Stream*> side;
      for (uint32_t i = 0; i < p_.te_gemm_streams; ++i) side.push_back(&gp.create_stream(fmt::format("te_gemm_{}", i)));
      te_streams_.push_back(std::move(side));
    }
    counts_ = std::make_unique<RingAllGather>(cluster, static_cast<uint64_t>(w.model().experts()) * mp::kLongBytes,
                                              [this](int g) { c_->gpu(g).signal_add(counts_done_[g], 1); });
    dispatch_ = std::make_unique<NcclGroupCall>(cluster, "a2a_dispatch_rows", rows, p_.nccl);
    dispatch_->set_hooks(nullptr, [this](int s, int d) { fn_->dispatch_landed(s, d); });
    probs_ = std::make_unique<NcclGroupCall>(cluster, "a2a_dispatch_probs", probs, p_.nccl);
    probs_->set_hooks(nullptr, [this](int s, int d) { fn_->probs_landed(s, d); });
    combine_ = std::make_unique<NcclGroupCall>(cluster, "a2a_combine_rows", rows.transposed(), p_.nccl);
    combine_->set_hooks(nullptr, [this](int s, int d) { fn_->combine_landed(s, d); });
    for (int g = 0; g < n; ++g) issue_until_sync(g);
  }

 private:
  // A PyTorch op on the compute stream: Python/ATen dispatch on the host, then the launch.
  void op(int g, Activity what, gpu::KernelSpec spec) { c_->op(g, c_->stream(g), what, std::move(spec)); }
  // The count all-gather's NCCL call (the all-to-alls are all_to_all below).
  void all_gather(int g, std::string name, std::function<void()> join, gpu::SignalId done) {
    c_->host(g).nccl_call();
    c_->launch(g, c_->stream(g), Activity::Communication, nccl_kernel(std::move(name), p_.nccl, std::move(join), done));
  }
  // An all_to_all_single: its group call's host cost, then its kernel; `done(start, end)` with
  // the times this rank's kernel was up and ended (its end is seen at the CTA's next poll of
  // its flag). A rank with nothing to send or receive launches nothing (NCCL's group has no
  // work for it): its part begins and ends when its stream reaches the call.
  void all_to_all(int g, NcclGroupCall& call, std::function<void(Time, Time)> done) {
    c_->host(g).nccl_call();
    if (!call.participates(g)) {
      c_->host(g).call([this, g, done = std::move(done)]() mutable {
        c_->stream(g).callback([this, done = std::move(done)] { done(c_->sim().now(), c_->sim().now()); });
      });
      return;
    }
    NcclGroupCall* c = &call;  // owned by this system for the whole run
    call.launch(g, c_->stream(g), [this, g, c, done = std::move(done)] { done(*c->resident_at(g), c_->sim().now()); });
  }

  // Transformer Engine's GroupedLinear in bf16 (fc1 or fc2): one Python op, then TE's
  // multi-stream cuBLAS path: the compute stream records an event that the first
  // min(te_gemm_streams, experts) side streams wait on, one GEMM per local expert with rows
  // goes to side stream i mod te_gemm_streams, and the compute stream waits for an event
  // recorded on each used side stream (docs/research/systems.md 1.2).
  void grouped_linear(int g, bool fc1) {
    Cluster& c = *c_;
    gpu::Gpu& gp = c.gpu(g);
    gpu::Host& host = c.host(g);
    gpu::Stream& main = c.stream(g);
    const MegatronLayout& l = layouts_[g];
    std::vector<gpu::Stream*>& side = te_streams_[g];
    const size_t used = std::min<size_t>(side.size(), l.expert_rows.size());
    host.framework_op();
    const gpu::EventId start = gp.create_event(fc1 ? "te fc1 start" : "te fc2 start");
    host.record(main, start);
    for (size_t i = 0; i < used; ++i) host.wait(*side[i], start);
    for (size_t e = 0; e < l.expert_rows.size(); ++e) {
      if (l.expert_rows[e] == 0) continue;
      const std::vector<uint64_t> rows{l.expert_rows[e]};
      gpu::GemmModel model = fc1 ? k_->gemm1_model(rows) : k_->gemm2_model(rows);
      c.launch(g, *side[e % side.size()], Activity::ExpertCompute, model.kernel(fc1 ? "te_fc1_gemm" : "te_fc2_gemm"));
    }
    for (size_t i = 0; i < used; ++i) {
      const gpu::EventId done = gp.create_event(fc1 ? "te fc1 done" : "te fc2 done");
      host.record(*side[i], done);
      host.wait(main, done);
    }
  }

  // Steps 1-6 of docs/research/systems.md 1.1: everything the host issues before it blocks.
  void issue_until_sync(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    const uint64_t e = static_cast<uint64_t>(w.model().experts());
    const uint64_t n = static_cast<uint64_t>(c.gpus());
    const uint64_t el = static_cast<uint64_t>(w.placement().local_experts(g).size());
    const uint64_t k = static_cast<uint64_t>(w.model().top_k());
    gpu::Stream& s = c.stream(g);
    fn_->input(g);
    launch_megatron_router(c, *k_, g, s, static_cast<int64_t>(t));
    // num_local_tokens_per_expert = routing_map.sum(0): read the [T, E] mask, write E counts.
    op(g, Activity::DataShuffle, k_->memory(g, "tokens_per_expert", t * e * mp::kMaskBytes + e * mp::kLongBytes));
    all_gather(g, "allgather_counts", [this, g] { counts_->join(g); }, counts_done_[g]);
    // output_splits, num_global_tokens_per_local_expert and their sums from the [N, E] matrix.
    op(g, Activity::DataShuffle, k_->memory(g, "count_splits", 2 * n * e * mp::kLongBytes));
    // The split sizes go to the host on a side stream that waits for the counts.
    gpu::Gpu& gp = c.gpu(g);
    gpu::Stream& dtoh = gp.create_stream("dtoh");
    const gpu::EventId counts_ready = gp.create_event("counts ready");
    c.host(g).framework_op();  // cuda_dtoh_stream.wait_stream(current stream)
    c.host(g).record(s, counts_ready);
    c.host(g).wait(dtoh, counts_ready);
    // tokens_per_expert, input_splits, output_splits, output_splits_tp, num_out_tokens,
    // num_global_tokens_per_local_expert (_maybe_dtoh_and_synchronize).
    const std::vector<uint64_t> copies{el * mp::kLongBytes, n * mp::kLongBytes, n * mp::kLongBytes,
                                       n * mp::kLongBytes,  mp::kLongBytes,     n * el * mp::kLongBytes};
    for (size_t i = 0; i + 1 < copies.size(); ++i) {
      c.host(g).framework_op();  // tensor.to("cpu", non_blocking=True)
      c.host(g).copy(dtoh, "D2H split sizes", copies[i], true);
    }
    // Permutation 1.
    const uint64_t rows = t * k;
    op(g, Activity::DataShuffle, k_->memory(g, "permute1_argsort", mp::argsort_bytes(e, t)));
    op(g, Activity::DataShuffle, k_->memory(g, "permute1_token_ids", mp::token_index_bytes(rows)));
    op(g, Activity::DataShuffle, k_->memory(g, "permute1_probs", mp::probs_gather_bytes(rows)));
    gpu::KernelSpec gather = k_->permute(g, rows, "permute1_rows");
    gather.on_done = [this, g] { fn_->permute1(g); };
    op(g, Activity::DataShuffle, std::move(gather));
    // The host blocks on the copies (the last one is issued with the synchronisation), then
    // issues the rest with the split sizes it now holds.
    c.host(g).framework_op();  // the last .to("cpu"), then the event's synchronize()
    c.host(g).framework_op();
    c.host_sync(g, dtoh, copies.back(), Time::zero(), [this, g] { issue_after_sync(g); });
  }

  // Steps 7-13.
  void issue_after_sync(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const MegatronLayout& l = layouts_[g];
    const uint64_t row_bytes = static_cast<uint64_t>(w.model().row_bytes());
    const uint64_t in = static_cast<uint64_t>(l.recv_total);
    all_to_all(g, *dispatch_, [this, g](Time start, Time end) {
      c_->phases(g).dispatch_start = start;
      c_->phases(g).dispatch_end = end;
    });
    all_to_all(g, *probs_, [](Time, Time) {});
    gpu::KernelSpec sort_rows = k_->memory(g, "sort_chunks_rows", 2 * in * row_bytes);
    sort_rows.on_done = [this, g] { fn_->sort(g); };
    op(g, Activity::DataShuffle, std::move(sort_rows));
    gpu::KernelSpec sort_probs = k_->memory(g, "sort_chunks_probs", 2 * in * mp::kProbBytes);
    sort_probs.on_done = [this, g] { fn_->sort_probs(g); };
    op(g, Activity::DataShuffle, std::move(sort_probs));
    if (!l.expert_rows.empty()) {  // an explicit expert map may leave a GPU without experts
      grouped_linear(g, true);
      c.host(g).call([this, g] {
        c_->stream(g).callback([this, g] {
          c_->phases(g).gemm1_end = c_->sim().now();
          fn_->gemm1(g);
        });
      });
      gpu::KernelSpec act = k_->activation(g, in);
      act.on_done = [this, g] { fn_->activation(g); };
      op(g, Activity::ExpertCompute, std::move(act));
      grouped_linear(g, false);
      c.host(g).call([this, g] { c_->stream(g).callback([this, g] { fn_->gemm2(g); }); });
    }
    gpu::KernelSpec unsort = k_->memory(g, "unsort_chunks_rows", 2 * in * row_bytes);
    unsort.on_done = [this, g] { fn_->unsort(g); };
    op(g, Activity::DataShuffle, std::move(unsort));
    all_to_all(g, *combine_, [this, g](Time start, Time end) {
      c_->phases(g).combine_start = start;
      c_->phases(g).combine_end = end;
    });
    // unpermute: torch.zeros(restore_shape), then scatter_add_ of the k rows of every token.
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    op(g, Activity::DataShuffle, k_->memory(g, "unpermute_zeros", t * row_bytes));
    gpu::KernelSpec sum = k_->scaling(g, t);
    sum.name = "unpermute_scatter_add";
    sum.on_done = [this, g] {
      fn_->unpermute(g);
      c_->layer_done(g);
    };
    op(g, Activity::Scaling, std::move(sum));
  }

  MegatronParams p_;
  Cluster* c_ = nullptr;
  std::unique_ptr<SharedKernels> k_;
  PerGpu<MegatronLayout> layouts_;
  std::unique_ptr<MegatronTeFunctional> fn_;  // does nothing in timing-only runs
  PerGpu<gpu::SignalId> counts_done_;
  PerGpu<std::vector<gpu::Stream*>> te_streams_;  // TE's GEMM compute streams
  std::unique_ptr<RingAllGather> counts_;
  std::unique_ptr<NcclGroupCall> dispatch_, probs_, combine_;
};

}  // namespace

SystemEntry megatron_te_system_entry() {
  return SystemEntry{"megatron-te",
                     "Megatron-Core all-to-all token dispatcher + TE grouped GEMM: count all-gather, host sync, "
                     "permutes and NCCL all-to-all, no overlap",
                     declare_megatron_params,
                     [](const Config& c) -> std::unique_ptr<MoeSystem> {
                       return std::make_unique<MegatronTeSystem>(MegatronParams::from(c));
                     },
                     54};
}

}  // namespace moehub
