// `megatron-te`: Megatron-Core's MoEAlltoAllTokenDispatcher (dropless, unfused permutes) with
// Transformer Engine grouped GEMM experts, no overlap, every step a launch on the compute
// stream (docs/research/systems.md section 1; docs/systems.md). Per GPU:
//   routing; per-expert counts (routing_map.sum(0)); NCCL all-gather of the [E] counts; split
//   sizes; D2H copies of the split sizes on a side stream; permutation 1 (token ids and probs
//   by masked_select, each blocking the host on its count; row gather); host blocks on the
//   copies; NCCL all-to-all of the rows and of the probs with those splits; with more than one
//   local expert sort_chunks_by_idxs (source-major -> expert-major, rows and probs); GEMM1,
//   activation (probs applied here, as the fused weighted SwiGLU of the current
//   code does), GEMM2; unsort; NCCL all-to-all back; unpermute (zeros + scatter_add, a pure sum
//   of each token's k rows).

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <vector>

#include "config/param_table.h"
#include "gpu/host.h"
#include "platform/framework_calls.h"
#include "platform/megatron_permute.h"
#include "platform/megatron_router.h"
#include "platform/moe_system.h"
#include "platform/nccl_group_call.h"
#include "platform/nccl_ring.h"
#include "platform/nccl_ring_all_gather.h"
#include "platform/resource_estimate.h"
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
        const uint64_t r = static_cast<uint64_t>(layouts_[s].send_rows[d]);
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
    counts_ = std::make_unique<RingAllGather>(cluster, static_cast<uint64_t>(megatron_routing(w).experts()) * mp::kLongBytes,
                                              [this](int g) { c_->gpu(g).signal_add(counts_done_[g], 1); });
    // Under EP+TP an EP group of one rank (TP = N) has no all-to-all: Megatron's all_to_all
    // returns its input (mappings.py L433-436). (Pure EP on one GPU keeps its self copy.)
    if (has_ep_all_to_all(w)) {
      dispatch_ = std::make_unique<NcclGroupCall>(cluster, "a2a_dispatch_rows", rows, p_.nccl);
      dispatch_->set_hooks(nullptr, [this](int s, int d) { fn_->dispatch_landed(s, d); });
      probs_ = std::make_unique<NcclGroupCall>(cluster, "a2a_dispatch_probs", probs, p_.nccl);
      probs_->set_hooks(nullptr, [this](int s, int d) { fn_->probs_landed(s, d); });
      combine_ = std::make_unique<NcclGroupCall>(cluster, "a2a_combine_rows", rows.transposed(), p_.nccl);
      combine_->set_hooks(nullptr, [this](int s, int d) { fn_->combine_landed(s, d); });
    }
    if (w.tp().tp() > 1) make_tp_collectives(cluster);
    for (int g = 0; g < n; ++g) issue_until_sync(g);
  }

 private:
  static bool has_ep_all_to_all(const Workload& w) { return w.tp().ep() > 1 || w.tp().tp() == 1; }

  // EP+TP: the TP group's all-gather-v of the received rows and probs and the reduce-scatter-v
  // of the partial outputs (token_dispatcher.py L741-751, L824-834). With uneven splits
  // PyTorch runs each as a coalesced group of T broadcasts / reduces, one per TP rank as root
  // (c10d ProcessGroupNCCL::allgather and ::reduce_scatter, their !same_size branch); with even
  // ones as one ncclAllGather / ncclReduceScatter. Both are NCCL ring chains, one per root,
  // forwarded rank to rank with the reduce's additions (platform/nccl_ring.h). The ring is the
  // TP group in TP-rank order (assumption: NCCL's ring search on NVSwitch keeps rank order).
  // The reduce-scatter moves fp32 partials (hidden_states.to(probs.dtype)).
  void make_tp_collectives(Cluster& cluster) {
    const int n = cluster.gpus();
    const uint64_t row_bytes = static_cast<uint64_t>(cluster.model().row_bytes());
    const uint64_t fp32_row = static_cast<uint64_t>(cluster.model().hidden) * mp::kProbBytes;
    RingSpec rows, probs, reduce;
    rows.block = probs.block = PerGpu<uint64_t>(n, 0);
    for (int s = 0; s < n; ++s) {
      const std::vector<int>& group = layouts_[s].tp_group;
      if (group.front() == s) {
        // PyTorch decides per group: even splits take ncclAllGather / ncclReduceScatter, whose
        // slices are 2 FIFO steps, broadcast / reduce 1 (nccl collectives.h:21-34).
        bool even = true;
        for (int d : group) even = even && layouts_[d].recv_total == layouts_[s].recv_total;
        rows.rings.push_back(group);
        rows.slice_steps.push_back(even ? 2 : 1);
      }
      const uint64_t block = static_cast<uint64_t>(layouts_[s].recv_total);
      rows.block[s] = block * row_bytes;
      probs.block[s] = block * mp::kProbBytes;
    }
    probs.rings = rows.rings;
    probs.slice_steps = rows.slice_steps;
    reduce = probs;
    reduce.op = RingOp::Reduce;
    for (int s = 0; s < n; ++s) reduce.block[s] = static_cast<uint64_t>(layouts_[s].recv_total) * fp32_row;
    gather_ = std::make_unique<NcclRing>(cluster, "ag_tp_rows", rows, p_.nccl);
    gather_->set_hooks([this](int s, int d) { fn_->gather_landed(s, d); });
    gather_probs_ = std::make_unique<NcclRing>(cluster, "ag_tp_probs", probs, p_.nccl);
    gather_probs_->set_hooks([this](int s, int d) { fn_->gather_probs_landed(s, d); });
    reduce_ = std::make_unique<NcclRing>(cluster, "rs_tp_rows", reduce, p_.nccl);
  }

  // A PyTorch op on the compute stream: Python/ATen dispatch on the host, then the launch.
  void op(int g, Activity what, gpu::KernelSpec spec) { c_->op(g, c_->stream(g), what, std::move(spec)); }
  // The count all-gather's NCCL call (the all-to-alls are all_to_all below).
  void all_gather(int g, std::string name, std::function<void()> join, gpu::SignalId done) {
    c_->host(g).nccl_call();
    c_->launch(g, c_->stream(g), Activity::Communication, nccl_kernel(std::move(name), p_.nccl, std::move(join), done));
  }
  // An all_to_all_single (or the TP group's all-gather / reduce-scatter): its group call's host
  // cost, then its kernel; `done(start, end)` with the times this rank's kernel was up and
  // ended (its end is seen at the CTA's next poll of its flag). A rank with nothing to send or
  // receive launches nothing (NCCL's group has no work for it): its part begins and ends when
  // its stream reaches the call.
  template <class Call>
  void group_call(int g, Call& call, std::function<void(Time, Time)> done) {
    c_->host(g).nccl_call();
    if (!call.participates(g)) {
      c_->host(g).call([this, g, done = std::move(done)]() mutable {
        c_->stream(g).callback([this, done = std::move(done)] { done(c_->sim().now(), c_->sim().now()); });
      });
      return;
    }
    Call* c = &call;  // owned by this system for the whole run
    call.launch(g, c_->stream(g), [this, g, c, done = std::move(done)] { done(*c->resident_at(g), c_->sim().now()); });
  }

  // Megatron's all_to_all (NVIDIA/Megatron-LM 0014f13 tensor_parallel/mappings.py:531-534):
  // _AllToAll.apply, an autograd Function whose forward (L416-445) calls input.contiguous() and
  // input.new_empty() (host-only torch calls) before all_to_all_single; with one rank it
  // returns its input after the apply.
  template <class Call>
  void all_to_all(int g, Call* call, std::function<void(Time, Time)> done) {
    c_->host(g).autograd_function();
    if (!call) return;
    c_->host(g).framework_op();
    c_->host(g).framework_op();
    group_call(g, *call, std::move(done));
  }

  // Transformer Engine's GroupedLinear in bf16 (fc1 or fc2): its torch calls from Python
  // (TE v1.13 e5edd6cc grouped_linear.py: `_GroupedLinear.apply` L755, `inp.view` and
  // `torch.split` L81, `torch.empty` L194, `torch.split(out)` L203, the custom op
  // `tex_ts.te_grouped_gemm_ts` cpp_extensions/gemm.py L354, `out.view` L268; the weight and
  // cast_if_needed loops are Python attribute checks, no torch calls), then TE's multi-stream
  // cuBLAS path: the compute stream records an event that the first
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
    for (int v = 0; v < 6; ++v) host.framework_op();  // apply, view, split, empty, split, custom op
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
    host.framework_op();  // out.view
  }

  // Steps 1-6 of docs/research/systems.md 1.1: everything the host issues before the
  // dispatch; the host blocks twice inside permutation 1 (its masked_selects) and once on the
  // D2H event.
  void issue_until_sync(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const Routing& r = megatron_routing(w);  // E logical experts under EP+TP
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    gpu::Stream& s = c.stream(g);
    fn_->input(g);
    launch_megatron_router(c, *k_, g, s, static_cast<int64_t>(t));
    issue_preprocess(g);
    gpu::Stream& dtoh = issue_split_copies(g);
    mp::issue_permute(c, *k_, g, s, t, static_cast<uint64_t>(r.experts()), t * static_cast<uint64_t>(r.top_k()),
                      [this, g] { fn_->permute1(g); });
    // dispatch_all_to_all's `self.d2h_event.synchronize()` at before_ep_alltoall (0014f13
    // token_dispatcher.py:524, 814); nothing follows the event on the D2H stream.
    c.host(g).framework_op();
    c.host_sync(g, dtoh, 0, Time::zero(), [this, g] { issue_after_sync(g); });
  }

  // The dispatcher's `preprocess` (NVIDIA/Megatron-LM 0014f13 token_dispatcher.py:335-454,
  // dropless, EP or TP > 1): the per-expert counts, input_splits, the count all-gather, then the
  // slice of the local experts' columns and its three sums (output_splits, output_splits_tp,
  // num_tokens_per_local_expert). Views and reshapes are framework ops without a kernel.
  void issue_preprocess(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    const uint64_t e = static_cast<uint64_t>(megatron_routing(w).experts());
    const uint64_t n = static_cast<uint64_t>(c.gpus()), ep = static_cast<uint64_t>(w.tp().ep());
    const uint64_t tp = static_cast<uint64_t>(w.tp().tp());
    const uint64_t el = static_cast<uint64_t>(w.placement().local_experts(g).size());
    gpu::Stream& s = c.stream(g);
    constexpr uint64_t kL = mp::kLongBytes;
    issue_framework_ops(c, *k_, g, s, Activity::DataShuffle, "",
                        {{"tokens_per_expert", {t * e * mp::kMaskBytes + e * kL}},  // routing_map.sum(dim=0)
                         {"long", {}},
                         {"reshape", {}},
                         {"input_splits", {e * kL + ep * kL}}});
    all_gather(g, "allgather_counts", [this, g] { counts_->join(g); }, counts_done_[g]);
    issue_framework_ops(c, *k_, g, s, Activity::DataShuffle, "",
                        {{"reshape", {}},
                         {"transpose", {}},
                         {"slice", {}},
                         {"local_counts_contiguous", {2 * n * el * kL}},
                         {"tokens_per_rank", {n * el * kL + n * kL}},  // .sum(axis=2)
                         {"output_splits", {}},                        // [tp_rank]
                         {"output_splits_tp", {n * kL + tp * kL}},     // .sum(axis=1)
                         {"tokens_per_local_expert", {n * el * kL + el * kL}}});  // .sum(dim=(0, 1))
    if (el > 1) c.host(g).framework_op();  // .view(-1, E_l)
  }

  // `_maybe_dtoh_and_synchronize` at before_permutation_1 (0014f13 token_dispatcher.py:777-
  // 810): the D2H stream waits for the compute stream, non-blocking copies of tokens_per_expert
  // [E_l], input_splits [EP], output_splits [EP], output_splits_tp [TP] and, with more than
  // one local expert, num_global_tokens_per_local_expert [TP x EP, E_l] (num_out_tokens is a
  // Python int when dropless: no copy), then an event on the D2H stream. Returns that stream.
  gpu::Stream& issue_split_copies(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const uint64_t n = static_cast<uint64_t>(c.gpus()), ep = static_cast<uint64_t>(w.tp().ep());
    const uint64_t tp = static_cast<uint64_t>(w.tp().tp());
    const uint64_t el = static_cast<uint64_t>(w.placement().local_experts(g).size());
    gpu::Gpu& gp = c.gpu(g);
    gpu::Stream& dtoh = gp.create_stream("dtoh");
    const gpu::EventId counts_ready = gp.create_event("counts ready");
    c.host(g).framework_op();  // cuda_dtoh_stream.wait_stream(current stream)
    c.host(g).record(c.stream(g), counts_ready);
    c.host(g).wait(dtoh, counts_ready);
    std::vector<uint64_t> copies{el * mp::kLongBytes, ep * mp::kLongBytes, ep * mp::kLongBytes, tp * mp::kLongBytes};
    if (el > 1) copies.push_back(n * el * mp::kLongBytes);
    for (const uint64_t bytes : copies) {
      c.host(g).framework_op();  // tensor.to("cpu", non_blocking=True)
      c.host(g).copy(dtoh, "D2H split sizes", bytes, true);
    }
    c.host(g).framework_op();  // d2h_event = cuda_dtoh_stream.record_event()
    c.host(g).record(dtoh, gp.create_event("d2h event"));
    return dtoh;
  }

  // Steps 7-13.
  void issue_after_sync(int g) {
    issue_dispatch(g);
    issue_experts(g);
    issue_combine(g);
  }

  // Steps 7-9: the EP all-to-alls of rows and probs, under EP+TP the TP all-gathers of both
  // (dispatch_postprocess), then sort_chunks_by_idxs. The dispatch phase ends when the rows are
  // at the experts: after the all-gather under EP+TP.
  void issue_dispatch(int g) {
    const Workload& w = c_->workload();
    const uint64_t row_bytes = static_cast<uint64_t>(w.model().row_bytes());
    const uint64_t in = static_cast<uint64_t>(layouts_[g].gather_total);
    const bool tp = gather_ != nullptr;
    all_to_all(g, dispatch_.get(), [this, g, tp](Time start, Time end) {
      c_->phases(g).dispatch_start = start;
      if (!tp) c_->phases(g).dispatch_end = end;
    });
    all_to_all(g, probs_.get(), [](Time, Time) {});
    if (!dispatch_) {  // the all-to-all's output is its input
      c_->host(g).call([this, g] {
        c_->stream(g).callback([this, g] {
          fn_->dispatch_landed(g, g);
          fn_->probs_landed(g, g);
        });
      });
    }
    if (tp) {
      group_call(g, *gather_, [this, g](Time start, Time end) {
        if (!c_->phases(g).dispatch_start) c_->phases(g).dispatch_start = start;
        c_->phases(g).dispatch_end = end;
      });
      group_call(g, *gather_probs_, [](Time, Time) {});
    }
    if (!sorts_chunks(g)) {  // one chunk per source: the received order is the experts' order
      c_->host(g).call([this, g] {
        c_->stream(g).callback([this, g] {
          fn_->sort(g);
          fn_->sort_probs(g);
        });
      });
      return;
    }
    gpu::KernelSpec sort_rows = k_->memory(g, "sort_chunks_rows", 2 * in * row_bytes);
    sort_rows.on_done = [this, g] { fn_->sort(g); };
    op(g, Activity::DataShuffle, std::move(sort_rows));
    gpu::KernelSpec sort_probs = k_->memory(g, "sort_chunks_probs", 2 * in * mp::kProbBytes);
    sort_probs.on_done = [this, g] { fn_->sort_probs(g); };
    op(g, Activity::DataShuffle, std::move(sort_probs));
  }

  // Permutation 2 and its inverse run only with more than one local expert (0014f13
  // token_dispatcher.py:569, and combine_preprocess's same test).
  bool sorts_chunks(int g) const { return c_->workload().placement().local_experts(g).size() > 1; }

  // Step 10: TE's GroupedLinear fc1, the weighted activation, fc2 (under EP+TP on the shard:
  // F / T columns of fc1, rows of fc2; experts.py TEGroupedMLP, transformer_engine.py L2459-2472).
  void issue_experts(int g) {
    const MegatronLayout& l = layouts_[g];
    if (l.expert_rows.empty()) return;  // an explicit expert map may leave a GPU without experts
    Cluster& c = *c_;
    // TEGroupedMLP.forward: `tokens_per_expert.tolist()` of the counts already on the host
    // (ZSL98/Megatron-LM fd11ea94 experts.py:433).
    c.host(g).framework_op();
    grouped_linear(g, true);
    c.host(g).call([this, g] {
      c_->stream(g).callback([this, g] {
        c_->phases(g).gemm1_end = c_->sim().now();
        fn_->gemm1(g);
      });
    });
    gpu::KernelSpec act = k_->activation(g, static_cast<uint64_t>(l.gather_total));
    act.on_done = [this, g] { fn_->activation(g); };
    if (c.model().gated) {
      // bias_swiglu_impl (fused_bias_swiglu.py:76-85 at fd11ea94): `input.view`,
      // `SwiGLUFunction.apply`, then the compiled swiglu, the kernel.
      c.host(g).framework_op();
      c.host(g).framework_op();
    }
    op(g, Activity::ExpertCompute, std::move(act));
    grouped_linear(g, false);
    c.host(g).call([this, g] { c_->stream(g).callback([this, g] { fn_->gemm2(g); }); });
  }

  // Steps 11-13: unsort; under EP+TP the reduce-scatter of the partial outputs in the probs'
  // dtype (combine_preprocess: a cast to fp32, the reduce-scatter-v, the cast back); the combine
  // all-to-all; unpermute.
  void issue_combine(int g) {
    const Workload& w = c_->workload();
    const MegatronLayout& l = layouts_[g];
    const uint64_t row_bytes = static_cast<uint64_t>(w.model().row_bytes());
    const uint64_t h = static_cast<uint64_t>(w.model().hidden), dtype = static_cast<uint64_t>(w.model().dtype_bytes);
    if (sorts_chunks(g)) {
      gpu::KernelSpec unsort = k_->memory(g, "unsort_chunks_rows", 2 * static_cast<uint64_t>(l.gather_total) * row_bytes);
      unsort.on_done = [this, g] { fn_->unsort(g); };
      op(g, Activity::DataShuffle, std::move(unsort));
    } else {
      c_->host(g).call([this, g] { c_->stream(g).callback([this, g] { fn_->unsort(g); }); });
    }
    if (reduce_) {
      const uint64_t all = static_cast<uint64_t>(l.gather_total) * h, mine = static_cast<uint64_t>(l.recv_total) * h;
      op(g, Activity::DataShuffle, k_->memory(g, "tp_to_fp32", all * (dtype + mp::kProbBytes)));
      group_call(g, *reduce_, [this, g](Time start, Time end) {
        c_->phases(g).combine_start = start;
        fn_->reduce_scattered(g);
        if (!combine_) {
          c_->phases(g).combine_end = end;
          fn_->combine_landed(g, g);  // no combine all-to-all: its output is its input
        }
      });
      op(g, Activity::DataShuffle, k_->memory(g, "tp_to_bf16", mine * (mp::kProbBytes + dtype)));
    }
    all_to_all(g, combine_.get(), [this, g](Time start, Time end) {
      if (!c_->phases(g).combine_start) c_->phases(g).combine_start = start;
      c_->phases(g).combine_end = end;
    });
    // unpermute: torch.zeros(restore_shape), then scatter_add_ of the k rows of every token.
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    op(g, Activity::DataShuffle, k_->memory(g, "unpermute_zeros", t * row_bytes));
    gpu::KernelSpec sum = k_->scaling(g, t, static_cast<uint64_t>(megatron_routing(w).top_k()));
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
  std::unique_ptr<NcclGroupCall> dispatch_, probs_, combine_;  // null without an EP all-to-all
  std::unique_ptr<NcclRing> gather_, gather_probs_, reduce_;  // EP+TP only
};

}  // namespace

namespace {

// What its NCCL calls can have in flight (EP only; EP+TP adds the TP group's rings, not
// counted, so nullopt): three all-to-all group calls (rows, probs, combine; nccl_messages_bound
// over their pairs, each call moving at most every routed row's bytes: a row goes to one
// GPU, and its probs are fewer bytes than it) and the count all-gather's ring, at most gpus - 1
// blocks per rank.
std::optional<uint64_t> megatron_flow_messages_bound(const Config& c) {
  const WorkloadConfig w = WorkloadConfig::from(c);
  if (w.tp > 1) return std::nullopt;
  const auto n = static_cast<uint64_t>(w.gpus);
  const ModelShape m = ModelShape::from(c);
  const long double pairs = static_cast<long double>(n) * static_cast<long double>(n - 1);
  const long double rows = static_cast<long double>(w.tokens) * static_cast<long double>(m.top_k());
  return nccl_messages_bound(NcclConfig::from(c), 3 * pairs, 3 * rows * static_cast<long double>(m.row_bytes())) +
         n * (n - 1);
}

}  // namespace

SystemEntry megatron_te_system_entry() {
  SystemEntry e{"megatron-te",
                "Megatron-Core all-to-all token dispatcher + TE grouped GEMM: count all-gather, host sync, "
                "permutes and NCCL all-to-all, no overlap",
                declare_megatron_params,
                [](const Config& c) -> std::unique_ptr<MoeSystem> {
                  return std::make_unique<MegatronTeSystem>(MegatronParams::from(c));
                },
                54,
                true};
  e.flow_messages_bound = megatron_flow_messages_bound;
  // The three all-to-all calls' pairs (EP+TP's rings are per TP group: fewer).
  e.state_bytes = [](const Config& c) -> uint64_t {
    const auto n = static_cast<uint64_t>(WorkloadConfig::from(c).gpus);
    return 3 * n * (n - 1) * kNcclPairBytes;
  };
  return e;
}

}  // namespace moehub
