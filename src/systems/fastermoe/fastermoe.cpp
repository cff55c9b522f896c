// `fastermoe` (docs/research/systems.md 2; laekov/fastmoe fmoe/fastermoe/schedule.py,
// cuda/fastermoe/smart_schedule.{h,cpp}, fmoe/functions.py): the smart schedule. Per GPU:
// routing; expert_count; the count exchange (grouped ncclSend/ncclRecv of E_l int64 per peer)
// and the host syncs the code makes before it can size buffers (8 per layer, listed in
// docs/systems.md); local scatter; zeroed buffers; then the pairwise exchange: on one comm
// stream, the dispatch send/recv of every step (S_0..S_{n-1}), then, after each step's experts,
// the combine send/recv (R_0..R_{n-1}); on the compute stream, step s's experts start as soon
// as S_s has arrived (an event between the streams). A sync of the comm stream ends the
// schedule; local gather and the weighted sum follow.

#include <fmt/format.h>
#include <memory>

#include "config/param_table.h"
#include "gpu/gpu.h"
#include "systems/fastermoe/fastermoe_schedule.h"
#include "platform/moe_system.h"
#include "platform/nccl_group_call.h"
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
    if (c.functional()) setup_functional();
    for (int g = 0; g < n_; ++g) issue(g);
  }

  nlohmann::json stats(Cluster&) override {
    return {{"group_size", schedule_->group_size()},
            {"steps", schedule_->steps()},
            {"nccl_calls_per_direction", schedule_->steps() * max_local_},
            {"host_syncs_per_gpu", kHostSyncs}};
  }

 private:
  static constexpr int kHostSyncs = 8;

  int local(int g) const { return static_cast<int>(cluster_->workload().placement().local_experts(g).size()); }
  int64_t expert_of(int g, int ei) const { return cluster_->workload().placement().local_experts(g)[u(ei)]; }
  // Rows from src's tokens to dst's ei-th local expert.
  int64_t rows(int src, int dst, int ei) const { return cluster_->workload().plan().rows_to_expert(src, expert_of(dst, ei)); }
  NcclGroupCall& S(int st, int ei) { return *dispatch_[u(st * max_local_ + ei)]; }
  NcclGroupCall& R(int st, int ei) { return *combine_[u(st * max_local_ + ei)]; }

  // Offset of (local expert ei, source src) in GPU g's global_input_buf: expert-major, then
  // source rank (computePtrs' global_ptr).
  int64_t global_ptr(int g, int ei, int src) const {
    int64_t off = 0;
    for (int e = 0; e < ei; ++e) {
      for (int s = 0; s < n_; ++s) off += rows(s, g, e);
    }
    for (int s = 0; s < src; ++s) off += rows(s, g, ei);
    return off;
  }
  int64_t rows_in(int g) const { return global_ptr(g, local(g), 0); }

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

    k.launch_routing(g, s, tokens);
    // count_by_gate: expert_count over the T*k gate indices.
    // Python-level calls (PyTorch ops and the fmoe_cuda extension's entry points) pay the
    // framework op cost (c.op, host.framework_op); what the extension's C++ issues does not.
    c.op(g, s, Activity::DataShuffle, k.memory(g, "fmoe_expert_count", tk * kCountBytes + e * kCountBytes));
    // expert_exchange on stream(0), then cudaStreamSynchronize(stream 0) (sync 1).
    host.framework_op();
    const gpu::EventId counted = gpu.create_event("fmoe_counted");
    host.record(s, counted);
    host.wait(smgr0, counted);
    host.nccl_call();
    count_exchange_->launch(g, smgr0);
    c.host_sync(g, smgr0, 0, Time::zero(), nullptr);
    // cumsum; lec_cum[-1].item() (sync 2); assign_pos.
    c.op(g, s, Activity::DataShuffle, k.memory(g, "fmoe_cumsum", 2 * e * kCountBytes));
    host.framework_op();
    c.host_sync(g, s, kCountBytes, Time::zero(), nullptr);
    c.op(g, s, Activity::DataShuffle, k.memory(g, "fmoe_assign_pos", 2 * tk * kCountBytes + e * kCountBytes));
    // prepare_forward: fwd_expert_count.sum().item() (sync 3); three .cpu() copies (syncs 4-6).
    c.op(g, s, Activity::DataShuffle, k.memory(g, "fmoe_fwd_count_sum", e * kCountBytes));
    for (const uint64_t bytes : {kCountBytes, e * kCountBytes, e * kCountBytes, u(local(g)) * kCountBytes}) {
      host.framework_op();  // .item(), then .cpu() of local, global and fwd expert counts
      c.host_sync(g, s, bytes, Time::zero(), nullptr);
    }
    // _local_scatter: index_select of the T*k rows into expert order.
    gpu::KernelSpec scatter = k.permute(g, tk, "fmoe_local_scatter");
    scatter.on_done = [this, g] { functional_local_scatter(g); };
    c.op(g, s, Activity::DataShuffle, std::move(scatter));
    // _smart_sch_forward (one call into the extension): new_zeros for global_input_buf, global_output_buf, output_buf.
    const uint64_t in_rows = u(rows_in(g));
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
        gpu::KernelSpec g1 = k.gemm1_model(grp).kernel(fmt::format("fmoe_gemm1_s{}", st), hooks(g, ei, base, true));
        ++gemm1_pending_[g];
        g1.on_done = [this, g] {
          if (--gemm1_pending_[g] == 0) cluster_->phases(g).gemm1_end = cluster_->sim().now();
        };
        // expert_fn is Python: GEMM1, activation, GEMM2 and the copy are framework ops.
        c.op(g, s, Activity::ExpertCompute, std::move(g1));
        c.op(g, s, Activity::ExpertCompute, k.activation(g, u(mrows)));
        c.op(g, s, Activity::ExpertCompute, k.gemm2_model(grp).kernel(fmt::format("fmoe_gemm2_s{}", st), hooks(g, ei, base, false)));
        // _expert_forward's y.copy_(y0) into global_output_buf.
        gpu::KernelSpec copy = k.memory(g, "fmoe_output_copy", 2 * u(mrows) * h * eb);
        copy.on_done = [this, g, base, mrows] { functional_output_copy(g, base, mrows); };
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
    gather.on_done = [this, g] { functional_local_gather(g); };
    c.op(g, s, Activity::DataShuffle, std::move(gather));
    gpu::KernelSpec sc = k.scaling(g, u(tokens));
    sc.on_done = [this, g] {
      functional_scaling(g);
      cluster_->layer_done(g);
    };
    c.op(g, s, Activity::Scaling, std::move(sc));
  }

  void mark(int g, NcclGroupCall& call, bool dispatch) {
    PhaseMarks& p = cluster_->phases(g);
    std::optional<Time>& first = dispatch ? p.dispatch_start : p.combine_start;
    std::optional<Time>& last = dispatch ? p.dispatch_end : p.combine_end;
    if (!first || *call.resident_at(g) < *first) first = call.resident_at(g);
    last = cluster_->sim().now();
  }

  // --- functional mode ---
  // sorted[g]: T*k rows in expert order (index_select by pos); gin[g], act[g], ytmp[g],
  // gout[g]: global input, GEMM1 (+act), GEMM2 output, global output (global_ptr layout);
  // outbuf[g]: the combined rows in sorted order; gathered[g]: (token, slot) order.
  struct Buffers {
    RowBuffer sorted, gin, act, ytmp, gout, outbuf, gathered;
    std::vector<int64_t> pos;        // sorted index -> token * k + slot
    std::vector<int64_t> expert_off; // sorted offset of each global expert
  };

  void setup_functional() {
    FunctionalData& fd = *cluster_->functional();
    const Workload& w = cluster_->workload();
    const int64_t h = fd.hidden(), f = fd.ffn(), k = w.routing().top_k(), e = w.model().experts();
    for (int g = 0; g < n_; ++g) {
      const int64_t tk = w.tokens().count(g) * k, in = rows_in(g);
      Buffers b{RowBuffer(fmt::format("fastermoe gpu{} sorted", g), tk, h),
                RowBuffer(fmt::format("fastermoe gpu{} global input", g), in, h),
                RowBuffer(fmt::format("fastermoe gpu{} activation", g), in, f),
                RowBuffer(fmt::format("fastermoe gpu{} expert output", g), in, h),
                RowBuffer(fmt::format("fastermoe gpu{} global output", g), in, h),
                RowBuffer(fmt::format("fastermoe gpu{} output", g), tk, h),
                RowBuffer(fmt::format("fastermoe gpu{} gathered", g), tk, h),
                {}, {}};
      // assign_pos: rows by global expert id, each expert's rows in (token, slot) order.
      for (int64_t ex = 0; ex < e; ++ex) {
        b.expert_off.push_back(static_cast<int64_t>(b.pos.size()));
        for (const RowRef& r : w.plan().expert_rows(ex)) {
          if (w.tokens().gpu_of_token(r.token) == g) b.pos.push_back(r.token * k + r.slot);
        }
      }
      buffers_.push_back(std::move(b));
    }
    for (size_t i = 0; i < dispatch_.size(); ++i) {
      const int ei = static_cast<int>(i) % max_local_;
      dispatch_[i]->set_hooks([this, ei](int s, int d) { move(s, d, ei, false, false); },
                              [this, ei](int s, int d) { move(s, d, ei, true, false); });
      combine_[i]->set_hooks([this, ei](int s, int d) { move(s, d, ei, false, true); },
                             [this, ei](int s, int d) { move(s, d, ei, true, true); });
    }
  }

  // Dispatch (combine = false): src's rows for dst's expert ei -> dst's global input at
  // global_ptr(dst, ei, src). Combine: those rows' outputs from src (the expert GPU) back to
  // dst's output buffer. Rows are read when the transfer starts and written on delivery.
  void move(int src, int dst, int ei, bool deliver, bool combine) {
    FunctionalData& fd = *cluster_->functional();
    const int expert_gpu = combine ? src : dst, token_gpu = combine ? dst : src;
    const int64_t ex = expert_of(expert_gpu, ei);
    const int64_t count = rows(token_gpu, expert_gpu, ei);
    const int64_t gbase = global_ptr(expert_gpu, ei, token_gpu);
    Buffers& tb = buffers_[token_gpu];
    Buffers& eb = buffers_[expert_gpu];
    const int64_t sbase = tb.expert_off[u(ex)];
    for (int64_t r = 0; r < count; ++r) {
      if (!combine) {
        const float* row = tb.sorted.read(sbase + r, fd);
        if (deliver) eb.gin.write(gbase + r, row);
      } else {
        const float* row = eb.gout.read(gbase + r, fd);
        if (deliver) tb.outbuf.write(sbase + r, row);
      }
    }
  }

  void functional_local_scatter(int g) {
    if (!cluster_->functional()) return;
    FunctionalData& fd = *cluster_->functional();
    Buffers& b = buffers_[g];
    const int64_t k = cluster_->workload().routing().top_k();
    for (size_t i = 0; i < b.pos.size(); ++i) b.sorted.write(static_cast<int64_t>(i), fd.input_row(b.pos[i] / k));
  }

  // GEMM tiles compute their row block (tile column 0 stands for the row) when dispatched.
  gpu::GemmHooks hooks(int g, int ei, int64_t base, bool first) {
    if (!cluster_->functional()) return {};
    gpu::GemmHooks hk;
    hk.before = [this, g, ei, base, first](const gpu::GemmTile& tile) -> std::optional<gpu::Step> {
      if (tile.tile_col != 0) return std::nullopt;
      FunctionalData& fd = *cluster_->functional();
      Buffers& b = buffers_[g];
      const int64_t ex = expert_of(g, ei);
      const int64_t r0 = base + static_cast<int64_t>(tile.tile_row * cluster_->gpu_config().gemm_tile.m);
      std::vector<float> tmp(u(first ? fd.ffn() : fd.hidden()));
      for (int64_t r = r0; r < r0 + static_cast<int64_t>(tile.rows); ++r) {
        if (first) {
          fd.layer().expert_hidden(ex, b.gin.read(r, fd), tmp.data());
          b.act.write(r, tmp.data());
        } else {
          fd.layer().expert_output(ex, b.act.read(r, fd), tmp.data());
          b.ytmp.write(r, tmp.data());
        }
      }
      return std::nullopt;
    };
    return hk;
  }

  void functional_output_copy(int g, int64_t base, int64_t count) {
    if (!cluster_->functional()) return;
    FunctionalData& fd = *cluster_->functional();
    Buffers& b = buffers_[g];
    for (int64_t r = base; r < base + count; ++r) b.gout.write(r, b.ytmp.read(r, fd));
  }

  void functional_local_gather(int g) {
    if (!cluster_->functional()) return;
    FunctionalData& fd = *cluster_->functional();
    Buffers& b = buffers_[g];
    const int64_t first = cluster_->workload().tokens().begin(g) * cluster_->workload().routing().top_k();
    for (size_t i = 0; i < b.pos.size(); ++i) b.gathered.write(b.pos[i] - first, b.outbuf.read(static_cast<int64_t>(i), fd));
  }

  void functional_scaling(int g) {
    if (!cluster_->functional()) return;
    FunctionalData& fd = *cluster_->functional();
    const Workload& w = cluster_->workload();
    Buffers& b = buffers_[g];
    const int64_t k = w.routing().top_k();
    for (int64_t t = w.tokens().begin(g); t < w.tokens().end(g); ++t) {
      fd.combine_token(t, [&](int64_t j) { return b.gathered.read((t - w.tokens().begin(g)) * k + j, fd); });
    }
  }

  FasterMoeConfig cfg_;
  Cluster* cluster_ = nullptr;
  int n_ = 0;
  int max_local_ = 0;
  std::unique_ptr<FasterMoeSchedule> schedule_;
  std::unique_ptr<NcclGroupCall> count_exchange_;
  std::vector<std::unique_ptr<NcclGroupCall>> dispatch_, combine_;
  PerGpu<int> gemm1_pending_;
  PerGpu<Buffers> buffers_;
};

void declare_fastermoe_params(ParamRegistry& r) { FasterMoeConfig::table().declare(r); }

}  // namespace

SystemEntry fastermoe_system_entry() {
  return SystemEntry{"fastermoe", "FasterMoE smart schedule: grouped pairwise exchange overlapped with per-step experts",
                     declare_fastermoe_params, [](const Config& c) -> std::unique_ptr<MoeSystem> {
                       return std::make_unique<FasterMoeSystem>(FasterMoeConfig::from(c));
                     },
                     25};
}

}  // namespace moehub
