// `fastermoe` (docs/research/systems.md 2; laekov/fastmoe fmoe/fastermoe/schedule.py,
// cuda/fastermoe/smart_schedule.{h,cpp}, fmoe/functions.py): the smart schedule. Per GPU:
// routing; expert_count; the count exchange (grouped ncclSend/ncclRecv of E_l int64 per peer)
// and the host syncs the code makes before it can size buffers (8 per layer, listed in
// docs/systems/fastermoe.md); local scatter; zeroed buffers; then the pairwise exchange: on one comm
// stream, the dispatch send/recv of every step (S_0..S_{n-1}), then, after each step's experts,
// the combine send/recv (R_0..R_{n-1}); on the compute stream, step s's experts start as soon
// as S_s has arrived (an event between the streams). A sync of the comm stream ends the
// schedule; local gather and the weighted sum follow.

#include <fmt/format.h>
#include <memory>

#include "config/param_table.h"
#include "gpu/gpu.h"
#include "systems/fastermoe/fastermoe_functional.h"
#include "systems/fastermoe/fastermoe_layout.h"
#include "systems/fastermoe/fastermoe_schedule.h"
#include "platform/moe_system.h"
#include "platform/fastmoe_ops.h"
#include "platform/framework_calls.h"
#include "platform/nccl_group_call.h"
#include "platform/resource_estimate.h"
#include "platform/shared_kernels.h"

namespace moehub {
namespace {

constexpr uint64_t kCountBytes = 8;  // int64 counts and positions (torch.long in fmoe)
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

struct FasterMoeConfig {
  int group_size = 4;
  NcclKernelShape nccl;
  static ParamTable<FasterMoeConfig> table() {
    ParamTable<FasterMoeConfig> t;
    t.integer("systems.fastermoe.group_size", &FasterMoeConfig::group_size,
              "Ranks per exchange group (FMOE_FASTER_GROUP_SIZE): GPUs / group_size steps; 1 = pairwise schedule")
        .at_least(1)
        .at_most(4096)
        .in_unit("GPUs");
    t.integer("systems.fastermoe.nccl_cta_threads", [](FasterMoeConfig& f) -> uint32_t& { return f.nccl.threads; },
              "Threads per NCCL CTA")
        .at_least(32)
        .at_most(1024);
    return t;
  }
  static FasterMoeConfig from(const Config& c) {
    FasterMoeConfig f;
    table().read(c, f);
    return f;
  }
};

class FasterMoeSystem final : public MoeSystem {
 public:
  explicit FasterMoeSystem(FasterMoeConfig cfg) : cfg_(cfg) {}

  void start(Cluster& c) override {
    cluster_ = &c;
    n_ = c.gpus();
    schedule_ = std::make_unique<FasterMoeSchedule>(n_, cfg_.group_size);
    layout_ = std::make_unique<FasterMoeLayout>(c.workload());
    const Workload& w = c.workload();
    const uint64_t row = w.model().row_bytes();
    for (int g = 0; g < n_; ++g) max_local_ = std::max(max_local_, local(g));
    gemm1_pending_.assign(n_, 0);

    // Count exchange: every rank sends each rank the counts of that rank's experts.
    PerPair<uint64_t> counts(n_);
    for (int s = 0; s < n_; ++s) {
      for (int d = 0; d < n_; ++d) counts(s, d) = u(local(d)) * kCountBytes;
    }
    count_exchange_ = std::make_unique<NcclGroupCall>(c, "fastermoe_expert_exchange", counts, cfg_.nccl);

    // One NCCL group per (step, local expert) and direction.
    for (int st = 0; st < schedule_->steps(); ++st) {
      for (int ei = 0; ei < max_local_; ++ei) {
        PerPair<uint64_t> fwd(n_);
        for (int s = 0; s < n_; ++s) {
          for (int d : schedule_->send_peers(s, st)) {
            if (ei >= local(d)) continue;
            const uint64_t b = u(rows(s, d, ei)) * row;
            fwd(s, d) = b;
          }
        }
        dispatch_.push_back(std::make_unique<NcclGroupCall>(c, fmt::format("fastermoe_S{}_e{}", st, ei), fwd, cfg_.nccl));
        combine_.push_back(std::make_unique<NcclGroupCall>(c, fmt::format("fastermoe_R{}_e{}", st, ei), fwd.transposed(), cfg_.nccl));
      }
    }
    fn_ = FasterMoeFunctional::make(c, *layout_);
    for (size_t i = 0; i < dispatch_.size(); ++i) {
      const int ei = static_cast<int>(i) % max_local_;
      dispatch_[i]->set_hooks([this, ei](int s, int d) { fn_->exchange(s, d, ei, false, false); },
                              [this, ei](int s, int d) { fn_->exchange(s, d, ei, true, false); });
      combine_[i]->set_hooks([this, ei](int s, int d) { fn_->exchange(s, d, ei, false, true); },
                             [this, ei](int s, int d) { fn_->exchange(s, d, ei, true, true); });
    }
    for (int g = 0; g < n_; ++g) issue(g);
  }

  nlohmann::json stats(Cluster&) override {
    return {{"group_size", schedule_->group_size()},
            {"steps", schedule_->steps()},
            {"nccl_calls_per_direction", schedule_->steps() * max_local_},
            {"host_syncs_per_gpu", kHostSyncs}};
  }

 private:
  static constexpr int kHostSyncs = 9;  // the eight of docs/systems/fastermoe.md and the gate's .cuda()

  int local(int g) const { return layout_->local(g); }
  int64_t rows(int src, int dst, int ei) const { return layout_->rows(src, dst, ei); }
  int64_t global_ptr(int g, int ei, int src) const { return layout_->global_ptr(g, ei, src); }
  NcclGroupCall& S(int st, int ei) { return *dispatch_[u(st * max_local_ + ei)]; }
  NcclGroupCall& R(int st, int ei) { return *combine_[u(st * max_local_ + ei)]; }

  void issue(int g) {
    Cluster& c = *cluster_;
    SharedKernels k(c);
    const ModelShape& m = c.model();
    gpu::Gpu& gpu = c.gpu(g);
    gpu::Host& host = c.host(g);
    gpu::Stream& s = c.stream(g);                            // torch current stream: experts
    gpu::Stream& smgr0 = gpu.create_stream("fastermoe_smgr0");  // CudaStreamManager stream(0)
    gpu::Stream& comm = gpu.create_stream("fastermoe_comm");    // stream(num_expert)
    const int64_t tokens = c.workload().tokens().count(g);
    const uint64_t tk = u(tokens * m.top_k()), e = u(m.experts()), h = u(m.hidden), eb = u(m.dtype_bytes);

    // FMoE.forward (fmoe/layers.py:215-228): ensure_comm (host only), then the gate.
    host.framework_op();
    launch_fastmoe_gate(c, k, g, s, tokens);
    // prepare_forward -> count_by_gate (fmoe/functions.py:28-49).
    launch_fastmoe_count(c, k, g, s, tokens);
    // expert_exchange on stream(0), then cudaStreamSynchronize(stream 0).
    host.framework_op();
    const gpu::EventId counted = gpu.create_event("fmoe_counted");
    host.record(s, counted);
    host.wait(smgr0, counted);
    host.nccl_call();
    count_exchange_->launch(g, smgr0);
    c.host_sync(g, smgr0, 0, Time::zero(), nullptr);
    launch_fastmoe_positions(c, k, g, s, tokens);
    // prepare_forward (functions.py:66-75): view + sum(dim=0), sum().item(), three .cpu().
    issue_framework_ops(c, k, g, s, Activity::DataShuffle, "fmoe_",
                        {{"view", {}}, {"fwd_count", {u(n_) * u(local(g)) * kCountBytes + u(local(g)) * kCountBytes}},
                         {"fwd_count_sum", {u(local(g)) * kCountBytes + kCountBytes}}});
    for (const uint64_t bytes : {kCountBytes, e * kCountBytes, e * kCountBytes, u(local(g)) * kCountBytes}) {
      blocking_copy_op(c, g, s, bytes, false);  // .item(), then .cpu() of local, global and fwd counts
    }
    // schedule.py:135-145: no_shadow_policy's CPU zeros; torch.div(pos, topk) for pos_s.
    issue_framework_ops(c, k, g, s, Activity::DataShuffle, "fmoe_", {{"no_shadow_zeros", {}}, {"div_pos", {2 * tk * kCountBytes}}});
    // _local_scatter: index_select of the T*k rows into expert order.
    gpu::KernelSpec scatter = k.permute(g, tk, "fmoe_local_scatter");
    scatter.on_done = [this, g] { fn_->local_scatter(g); };
    c.op(g, s, Activity::DataShuffle, std::move(scatter));
    // _smart_sch_forward (one call into the extension): new_zeros for global_input_buf, global_output_buf, output_buf.
    const uint64_t in_rows = u(layout_->rows_in(g));
    host.framework_op();
    c.launch(g, s, Activity::DataShuffle, k.memory(g, "fmoe_zeros_global_input", in_rows * h * eb));
    c.launch(g, s, Activity::DataShuffle, k.memory(g, "fmoe_zeros_global_output", in_rows * h * eb));
    c.launch(g, s, Activity::DataShuffle, k.memory(g, "fmoe_zeros_output", tk * h * eb));
    // smgr->syncTorch() (sync 7): the schedule is issued from an idle GPU.
    c.host_sync(g, s, 0, Time::zero(), nullptr);

    const int steps = schedule_->steps();
    std::vector<gpu::EventId> input_ready, output_ready;
    for (int st = 0; st < steps; ++st) {
      input_ready.push_back(gpu.create_event(fmt::format("fmoe_input_ready_{}", st)));
      output_ready.push_back(gpu.create_event(fmt::format("fmoe_output_ready_{}", st)));
    }
    // S_0..S_{n-1} on the comm stream.
    for (int st = 0; st < steps; ++st) {
      for (int ei = 0; ei < max_local_; ++ei) {
        host.nccl_call();
        S(st, ei).launch(g, comm, [this, g, st, ei] { mark(g, S(st, ei), true); });
      }
      host.record(comm, input_ready[u(st)]);
    }
    // C_0..C_{n-1} on the compute stream, each after its step's receives.
    for (int st = 0; st < steps; ++st) {
      host.wait(s, input_ready[u(st)]);
      const std::vector<int> from = schedule_->recv_peers(g, st);
      for (int ei = 0; ei < local(g); ++ei) {
        int64_t mrows = 0;
        for (int src : from) mrows += rows(src, g, ei);
        if (mrows == 0) continue;  // computeFn skips empty micro-batches
        const int64_t base = global_ptr(g, ei, from.front());
        const std::vector<uint64_t> grp{u(mrows)};
        gpu::KernelSpec g1 = k.gemm1_model(grp).kernel(fmt::format("fmoe_gemm1_s{}", st), fn_->gemm_hooks(g, ei, base, true));
        ++gemm1_pending_[g];
        g1.on_done = [this, g] {
          if (--gemm1_pending_[g] == 0) cluster_->phases(g).gemm1_end = cluster_->sim().now();
        };
        // expert_fn is Python: torch.tensor([x.shape[0]]) (a CPU tensor, schedule.py:40), then
        // GEMM1, activation, GEMM2 and the copy are framework ops.
        host.framework_op();
        c.op(g, s, Activity::ExpertCompute, std::move(g1));
        c.op(g, s, Activity::ExpertCompute, k.activation(g, u(mrows)));
        c.op(g, s, Activity::ExpertCompute, k.gemm2_model(grp).kernel(fmt::format("fmoe_gemm2_s{}", st), fn_->gemm_hooks(g, ei, base, false)));
        // _expert_forward's y.copy_(y0) into global_output_buf.
        gpu::KernelSpec copy = k.memory(g, "fmoe_output_copy", 2 * u(mrows) * h * eb);
        copy.on_done = [this, g, base, mrows] { fn_->output_copy(g, base, mrows); };
        c.op(g, s, Activity::DataShuffle, std::move(copy));
      }
      host.record(s, output_ready[u(st)]);
    }
    // R_0..R_{n-1}: same comm stream, so after every S step.
    for (int st = 0; st < steps; ++st) {
      host.wait(comm, output_ready[u(st)]);
      for (int ei = 0; ei < max_local_; ++ei) {
        host.nccl_call();
        R(st, ei).launch(g, comm, [this, g, st, ei] { mark(g, R(st, ei), false); });
      }
    }
    // smgr->sync(num_expert + 1): the comm stream holds the last work (syncs of idle streams
    // return at once and are not modelled) (sync 8).
    c.host_sync(g, comm, 0, Time::zero(), nullptr);
    // _local_gather: zeros + index_copy_ back to (token, slot) order; then the gate-weighted sum.
    c.op(g, s, Activity::DataShuffle, k.memory(g, "fmoe_gather_zeros", tk * h * eb));
    gpu::KernelSpec gather = k.permute(g, tk, "fmoe_local_gather");
    gather.on_done = [this, g] { fn_->local_gather(g); };
    c.op(g, s, Activity::DataShuffle, std::move(gather));
    // layers.py:275-286: view of the output, gate_score.view, torch.bmm (the weighted sum), reshape.
    host.framework_op();
    host.framework_op();
    gpu::KernelSpec sc = k.scaling(g, u(tokens));
    sc.on_done = [this, g] {
      fn_->scaling(g);
      cluster_->layer_done(g);
    };
    c.op(g, s, Activity::Scaling, std::move(sc));
    host.framework_op();
  }

  void mark(int g, NcclGroupCall& call, bool dispatch) {
    PhaseMarks& p = cluster_->phases(g);
    std::optional<Time>& first = dispatch ? p.dispatch_start : p.combine_start;
    std::optional<Time>& last = dispatch ? p.dispatch_end : p.combine_end;
    if (!first || *call.resident_at(g) < *first) first = call.resident_at(g);
    last = cluster_->sim().now();
  }

  FasterMoeConfig cfg_;
  Cluster* cluster_ = nullptr;
  int n_ = 0;
  int max_local_ = 0;
  std::unique_ptr<FasterMoeSchedule> schedule_;
  std::unique_ptr<FasterMoeLayout> layout_;
  std::unique_ptr<NcclGroupCall> count_exchange_;
  std::vector<std::unique_ptr<NcclGroupCall>> dispatch_, combine_;
  PerGpu<int> gemm1_pending_;
  std::unique_ptr<FasterMoeFunctional> fn_;  // does nothing in timing-only runs
};

void declare_fastermoe_params(ParamRegistry& r) { FasterMoeConfig::table().declare(r); }

}  // namespace

namespace {

// The most physical experts on one GPU: EPLB fills ceil(P / N) slots per GPU
// (moe/replication.h), or the expert map's.
int64_t fastermoe_most_local(const WorkloadConfig& w, int64_t physical) {
  int64_t most = (physical + w.gpus - 1) / w.gpus;
  std::vector<int64_t> per_gpu(static_cast<size_t>(w.gpus), 0);
  for (int64_t g : w.expert_map) {
    if (g >= 0 && g < w.gpus) most = std::max(most, ++per_gpu[static_cast<size_t>(g)]);
  }
  return most;
}

// Its only traffic is NCCL group calls: the count exchange and, per (step, local expert) and
// direction, one call whose pairs are that step's (each ordered pair falls in exactly one step,
// FasterMoeSchedule::send_peers), so over all calls at most (1 + 2 x most local experts) x every
// pair (nccl_messages_bound), carrying the counts (kCountBytes per physical expert and source)
// and each routed row once per direction. Most local experts: a GPU's share of the experts and
// redundant copies (EPLB fills ceil(P / N) slots per GPU, moe/replication.h), or the expert map's.
std::optional<uint64_t> fastermoe_flow_messages_bound(const Config& c) {
  const WorkloadConfig w = WorkloadConfig::from(c);
  const int64_t physical = ModelShape::from(c).experts() + w.redundant_experts;
  const int64_t most = fastermoe_most_local(w, physical);
  const ModelShape m = ModelShape::from(c);
  const auto n = static_cast<long double>(w.gpus);
  const long double counts = n * static_cast<long double>(physical) * kCountBytes;
  const long double rows = static_cast<long double>(w.tokens) * static_cast<long double>(m.top_k());
  return nccl_messages_bound(NcclConfig::from(c), static_cast<long double>(1 + 2 * most) * n * (n - 1),
                             counts + 2 * rows * static_cast<long double>(m.row_bytes()));
}

// Every pair of its calls (as above), and the kernels each GPU enqueues up front: per (step,
// local expert) 27.4 in the heaptrack of kKernelBytes (449190 kernels on 256 GPUs, 64 steps, one
// local expert each: its two NCCL calls, the expert's kernels where rows arrive, the stream
// ops), taken as 28 plus the 4 expert kernels (GEMM1, activation, GEMM2, copy) a step with no
// rows skips.
uint64_t fastermoe_state_bytes(const Config& c) {
  const WorkloadConfig w = WorkloadConfig::from(c);
  const int64_t physical = ModelShape::from(c).experts() + w.redundant_experts;
  const int64_t most = fastermoe_most_local(w, physical);
  const auto n = u(w.gpus);
  const uint64_t steps = n / u(std::max(FasterMoeConfig::from(c).group_size, 1));
  return u(1 + 2 * most) * n * (n - 1) * kNcclPairBytes + n * steps * u(most) * (28 + 4) * kKernelBytes;
}

}  // namespace

SystemEntry fastermoe_system_entry() {
  SystemEntry e{"fastermoe", "FasterMoE smart schedule: grouped pairwise exchange overlapped with per-step experts",
              declare_fastermoe_params, [](const Config& c) -> std::unique_ptr<MoeSystem> {
                return std::make_unique<FasterMoeSystem>(FasterMoeConfig::from(c));
              },
              25, false,
              // docs/systems/ep-tp.md
              "FastMoE v1.1.0 never shards an expert's weights: its Megatron adapter puts whole experts on the "
              "data-parallel group and all-reduces the TP group's outputs (laekov/fastmoe @5b60285 "
              "fmoe/megatron/layers.py L82-84, L151), and slice_group splits tokens (fmoe/layers.py L219-226)"};
  e.flow_messages_bound = fastermoe_flow_messages_bound;
  e.state_bytes = fastermoe_state_bytes;
  return e;
}

}  // namespace moehub
