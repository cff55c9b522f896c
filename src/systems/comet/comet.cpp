// `comet` (Comet, MLSys'25; code: bytedance/flux src/moe_ag_scatter = layer0, src/moe_gather_rs
// = layer1; docs/research/systems.md 5). Fine-grained overlap inside fused kernels:
//   prologue  Megatron's router and the all-gathers of its probabilities and indices, as the
//             MoE-Hub authors' harness issues them (comet_router.h); D2H of the counts + stream sync; host layout
//             and tile schedule (own rank first, then ring order); H2D of the plan.
//   layer0    dispatch + GEMM1: either specialised communication blocks on the first
//             `comm_blocks` SMs push rows with one-sided stores whose arrival bumps a per-tile
//             flag (the paper's design, MODELING.md 3), or copy-engine gets of whole token
//             shards with per-source-rank flags (what flux's open-source layer0 does). GEMM1
//             tiles poll their flags; tiles needing local rows run first.
//   layer1    GEMM2 + combine: GEMM2 on the SMs left by `gather_rs_ctas` communication blocks;
//             tiles count into per-column-split flags; the communication blocks poll them, sum
//             each token's local rows (weighted) and store the partial into its owner's buffer.
//   epilogue  barrier (every partial landed), sum of the world partials per token.
// docs/systems/comet.md lists every constant and its source.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>

#include "gpu/memory_kernel.h"
#include "systems/comet/comet_functional.h"
#include "systems/comet/comet_plan.h"
#include "systems/comet/comet_router.h"
#include "moe/workload.h"
#include "platform/moe_system.h"
#include "platform/overlap_common.h"
#include "platform/remote_memory.h"
#include "platform/shared_kernels.h"

namespace moehub {
namespace {

using gpu::Step;
using gpu::WaitMode;

class CometSystem final : public MoeSystem {
 public:
  explicit CometSystem(CometParams p) : p_(std::move(p)) {}

  void start(Cluster& cluster) override {
    c_ = &cluster;
    k_ = std::make_unique<SharedKernels>(cluster);
    remote_ = std::make_unique<RemoteMemory>(cluster);
    remote_->on_write([this](int g, uint64_t code, uint64_t bytes) { write_arrived(g, code, bytes); });
    plan_ = std::make_unique<CometPlan>(cluster, p_);
    fn_ = CometFunctional::make(cluster, *plan_);
    const int n = cluster.gpus();
    // The harness's two `_all_gather_base` calls (moe_layer.py:703-704): every GPU gets every
    // GPU's routing, from which flux's splits follow (comet_router.h).
    gather_probs_ = std::make_unique<StreamCollective>(cluster, "nccl_allgather_probs",
                                                       StreamCollective::to_every_peer(n, comet_probs_bytes(cluster)));
    gather_indices_ = std::make_unique<StreamCollective>(cluster, "nccl_allgather_indices",
                                                         StreamCollective::to_every_peer(n, comet_indices_bytes(cluster)));
    barrier_layer0_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_layer0", StreamCollective::to_every_peer(n, kFlagBytes));
    barrier1_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_layer1", StreamCollective::to_every_peer(n, kFlagBytes));
    barrier_end_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_end", StreamCollective::to_every_peer(n, kFlagBytes));
    if (p_.dispatch == CometParams::Dispatch::CopyEngineGets) {
      barrier_gets_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_ag", StreamCollective::to_every_peer(n, kFlagBytes));
    }
    gpu_.resize(n);
    partial_arrived_.assign(plan_->partials(), 0);
    for (int g = 0; g < n; ++g) start_gpu(g);
  }

  nlohmann::json stats(Cluster& cluster) override {
    nlohmann::json j;
    j["dispatch"] = p_.dispatch == CometParams::Dispatch::CommBlocks ? "comm_blocks" : "copy_engine_gets";
    nlohmann::json per = nlohmann::json::array();
    for (int g = 0; g < cluster.gpus(); ++g) {
      const GpuState& s = gpu_[g];
      const gpu::Gpu& d = cluster.gpu(g);
      nlohmann::json x = {{"gpu", g},
                          {"dispatch_comm_blocks", plan_->gpu(g).comm_blocks},
                          {"gather_rs_ctas", p_.gather_rs_ctas},
                          {"polls", d.counters().polls},
                          {"dispatch_comm_sm_min", s.comm_sm_min},
                          {"dispatch_comm_sm_max", s.comm_sm_max},
                          {"gather_rs_sm_min", s.rs_sm_min},
                          {"gather_rs_sm_max", s.rs_sm_max},
                          {"gemm1_min_sm", s.gemm1_sm_min},
                          {"gemm2_min_sm", s.gemm2_sm_min}};
      if (s.first_gemm1_math) x["gemm1_first_math_ps"] = s.first_gemm1_math->ps();
      if (cluster.phases(g).dispatch_end) x["dispatch_end_ps"] = cluster.phases(g).dispatch_end->ps();
      per.push_back(x);
    }
    j["gpus"] = per;
    j["remote_reads"] = remote_->reads();
    return j;
  }

 private:
  static constexpr uint64_t kCountBytes = 4;  // int32 per-expert counts (flux `splits`)
  static constexpr uint64_t kFlagBytes = 8;   // one 64-bit flag store per peer (barrier)
  // flux db4ffe0 gemm_grouped_v3_ag_scatter.hpp:220: the barrier block, world_size ints padded to 128 B.
  static uint64_t barrier_block_bytes(int gpus) { return (static_cast<uint64_t>(gpus) * kCountBytes + 127) / 128 * 128; }

  struct Cursor {  // a persistent communication block's position in its job list
    size_t job = 0;
    uint32_t sub = 0;
    uint32_t split = 0;
  };
  struct GpuState {
    gpu::Stream* comm = nullptr;
    std::vector<Cursor> comm_cursor, rs_cursor;
    std::vector<uint32_t> dispatch_arrived;  // bytes per dispatch-buffer row
    std::vector<uint32_t> tile_rows_left;    // rows not yet in, per GEMM1 tile-row (for the flag's trace mark)
    std::vector<int64_t> split_count;        // GEMM2 tiles counted per split (for the trace mark)
    uint64_t dispatch_rows_left = 0;
    uint64_t combine_rows_left = 0;
    std::optional<Time> first_gemm1_math, last_gemm1_math, first_gemm2_math, last_gemm2_math;
    int32_t comm_sm_min = INT32_MAX, comm_sm_max = -1, rs_sm_min = INT32_MAX, rs_sm_max = -1;
    int32_t gemm1_sm_min = INT32_MAX, gemm2_sm_min = INT32_MAX;
  };

  // ---------------------------------------------------------------- per-GPU program

  void start_gpu(int g) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CometGpuPlan& pl = plan_->gpu(g);
    gpu::Stream& st = c.stream(g);
    s.comm = &c.gpu(g).create_stream("comet_comm");
    s.dispatch_arrived.assign(pl.rows.size(), 0);
    s.dispatch_rows_left = pl.rows.size();
    s.tile_rows_left.assign(pl.tile_flags.size(), 0);
    for (uint32_t t : pl.row_tile) ++s.tile_rows_left[t];
    s.split_count.assign(plan_->splits(), 0);
    s.combine_rows_left = pl.partials_expected;
    const int64_t tokens = c.workload().tokens().count(g);
    launch_comet_router(c, *k_, g, st, tokens);
    comet_all_gather_outputs(c, g);
    const gpu::BlockShape small = k_->memory_shape();
    for (StreamCollective* gather : {gather_probs_.get(), gather_indices_.get()}) {
      c.host(g).framework_op();  // torch.distributed._all_gather_base
      c.host(g).nccl_call();
      c.launch(g, st, Activity::Communication, gather->kernel(g, small));
    }
    c.host(g).framework_op();  // moe_layer.py:707 flux_ag_op.forward_multiple_weights
    // flux db4ffe0 gemm_grouped_v3_ag_scatter.cc (forward_impl, docs/research/opcount-flashmoe.md
    // section 4): :286 cudaMemsetAsync of the barrier block (an int per rank, padded to 128 B).
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "comet_barrier_memset", barrier_block_bytes(c.gpus())));
    if (p_.dispatch == CometParams::Dispatch::CopyEngineGets) {
      // all_gather_all2all: :176 own shard into the symmetric buffer (D2D), :182 barrier on the
      // compute stream, :183-184 event to the copy stream, then one get per peer in ring order
      // from the own rank, each followed by its flag write (:209-220).
      const uint64_t shard = static_cast<uint64_t>(c.workload().tokens().count(g)) * c.model().row_bytes();
      c.launch(g, st, Activity::DataShuffle, k_->memory(g, "comet_input_shard_copy", 2 * shard));
      c.launch(g, st, Activity::Communication, barrier_gets_->kernel(g, small));
      const gpu::EventId ready = c.gpu(g).create_event("shard in buffer");
      c.host(g).record(st, ready);
      c.host(g).wait(*s.comm, ready);
      c.host(g).call([this, g] {
        gpu_[g].comm->callback([this, g] { start_gets(g); });
      });
    }
    // :298 calc_gather_index and :309 ag_scatter_sort: index kernels over every routed row.
    const uint64_t index_bytes = static_cast<uint64_t>(c.workload().logical_routing().rows()) * 4 * 2;
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "calc_gather_index", index_bytes));
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "ag_scatter_sort", index_bytes));
    // :322 D2H of total_nrows_ep, :324 D2H of the N x E_l sorted splits, :330 stream sync; then
    // the host layout and tile schedule.
    c.host(g).copy(st, "D2H total_nrows_ep", kCountBytes, true);
    const uint64_t d2h = static_cast<uint64_t>(c.gpus()) * pl.experts.size() * kCountBytes;
    c.host_sync(g, st, d2h, p_.layout_host_time, [this, g] { after_layout(g); });
  }

  void after_layout(int g) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CometGpuPlan& pl = plan_->gpu(g);
    gpu::Stream& st = c.stream(g);
    // op->run: initialize_args_workspace copies the arguments H2D and synchronises the stream
    // (flux db4ffe0 gemm_grouped_v3_impl.hpp:180-190), then the fused kernel.
    blocking_h2d(g, st, pl.plan_bytes);
    if (p_.dispatch == CometParams::Dispatch::CommBlocks && !pl.jobs.empty()) {
      const gpu::EventId planned = c.gpu(g).create_event("layout on device");
      c.host(g).record(st, planned);
      c.host(g).wait(*s.comm, planned);
      c.launch_grid(g, *s.comm, Activity::Communication, dispatch_comm_kernel(g));  // a grid of the fused kernel
    }
    if (!pl.experts.empty()) {
      gpu::KernelSpec g1 = gemm1_kernel(g);
      c.launch(g, st, Activity::Polling, std::move(g1));
    }
    const gpu::BlockShape small = k_->memory_shape();
    // :429 the compute stream waits for the gets (all_gather_event), :433 barrier so the next
    // layer may overwrite the symmetric buffer.
    std::optional<std::pair<gpu::SignalId, int64_t>> gets_in;
    if (p_.dispatch == CometParams::Dispatch::CopyEngineGets) gets_in = std::make_pair(pl.gets_done, static_cast<int64_t>(c.gpus()));
    c.launch(g, st, Activity::Communication, barrier_layer0_->kernel(g, small, gets_in));
    c.host(g).framework_op();  // moe_layer.py:717 self.activation_func(outputs[0])
    if (!pl.experts.empty()) c.launch(g, st, Activity::ExpertCompute, k_->activation(g, pl.rows.size()));
    c.host(g).framework_op();  // :723 scatter_index.view(-1)
    c.host(g).framework_op();  // :719 flux_rs_op.forward_gather_rs
    issue_layer1(g);
  }

  // flux db4ffe0 gemm_grouped_v3_gather_rs.cc forward_gather_rs_impl (EP > 1): :611 zeroed
  // N x T x H output buffer, :613 barrier; prepare_args: the E_l x SPLITS problems on the host,
  // :378 and :384 two H2D copies, :426 ep_indexes_count.zero_(), :431 ep_index_filter; then
  // GEMM2 beside the gather-RS blocks (one fused kernel), :722 barrier, :723 barrier.zero_(),
  // :727 the sum over the [world, T, H] view.
  void issue_layer1(int g) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CometGpuPlan& pl = plan_->gpu(g);
    gpu::Stream& st = c.stream(g);
    const gpu::BlockShape small = k_->memory_shape();
    const uint64_t out_bytes = static_cast<uint64_t>(c.gpus()) * static_cast<uint64_t>(c.workload().tokens().count(g)) *
                               c.model().row_bytes();
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "output_buffer_zero", out_bytes));
    c.launch(g, st, Activity::Communication, barrier1_->kernel(g, small));
    c.host(g).work(p_.gather_rs_host_time);
    const uint64_t args = static_cast<uint64_t>(pl.experts.size()) * static_cast<uint64_t>(p_.column_splits) * kProblemBytes;
    host_to_device_copy(c, g, st, "H2D gather_rs problems", args);
    host_to_device_copy(c, g, st, "H2D gather_rs splits", static_cast<uint64_t>(pl.experts.size()) * kCountBytes);
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "ep_indexes_count_zero", kCountBytes));
    const uint64_t routed = static_cast<uint64_t>(c.workload().logical_routing().rows());
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "ep_index_filter", routed * 4 * 2));
    const gpu::EventId ready = c.gpu(g).create_event("layer1 barrier");
    c.host(g).record(st, ready);
    c.host(g).wait(*s.comm, ready);
    c.launch_grid(g, *s.comm, Activity::Communication, gather_rs_kernel(g));  // a grid of the fused kernel
    const gpu::EventId rs_done = c.gpu(g).create_event("gather_rs done");
    c.host(g).record(*s.comm, rs_done);
    if (!pl.experts.empty()) c.launch(g, st, Activity::Polling, gemm2_kernel(g));
    c.host(g).wait(st, rs_done);
    c.launch(g, st, Activity::Communication,
             barrier_end_->kernel(g, small, std::make_pair(pl.combine_signal, static_cast<int64_t>(pl.partials_expected * c.model().row_bytes()))));
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "gather_rs_barrier_zero", (static_cast<uint64_t>(p_.column_splits) + 1) * kCountBytes));
    const uint64_t tokens = static_cast<uint64_t>(c.workload().tokens().count(g));
    gpu::KernelSpec sum = k_->memory(g, "combine_sum", (static_cast<uint64_t>(c.gpus()) + 1) * tokens * c.model().row_bytes());
    sum.on_done = [this, g] {
      fn_->outputs(g);
      c_->layer_done(g);
    };
    c.launch(g, st, Activity::Scaling, std::move(sum));
    c.host(g).framework_op();  // :729 mlp_output.unsqueeze(1)
  }

  // cudaMemcpyAsync(H2D) + cudaStreamSynchronize issued from C++ (no framework op of its own).
  void blocking_h2d(int g, gpu::Stream& st, uint64_t bytes) {
    auto start = std::make_shared<Time>();
    c_->host(g).call([this, start] { *start = c_->sim().now(); });
    c_->host(g).h2d_sync(st, bytes, [this, g, start] { c_->log(g, Activity::Synchronisation, *start, c_->sim().now()); });
  }

  // A flag reaching its threshold, on the GPU's "flags" timeline track.
  void mark_flag(int g, const std::string& what) {
    if (TraceRecorder* t = c_->trace()) t->instant(g, t->track(g, "flags"), what, "flag", c_->sim().now());
  }

  // ---------------------------------------------------------------- layer0: copy-engine gets

  void start_gets(int g) {
    Cluster& c = *c_;
    c.phases(g).dispatch_start = c.sim().now();
    get_next(g, 0);
  }

  // One get at a time on the copy stream (stream order), own rank first.
  void get_next(int g, int j) {
    Cluster& c = *c_;
    if (j >= c.gpus()) return;
    const int src = (g + j) % c.gpus();
    const uint64_t bytes = static_cast<uint64_t>(c.workload().tokens().count(src)) * c.model().row_bytes();
    remote_->read(g, src, bytes, [this, g, j, src] {
      const CometGpuPlan& pl = plan_->gpu(g);
      for (uint64_t pos : pl.rows_from_source[src]) row_in(g, pos);
      c_->gpu(g).signal_set(pl.source_flags[src], 1);  // cuStreamWriteValue
      c_->gpu(g).signal_add(pl.gets_done, 1);            // all_gather_event (:223) counts the gets
      mark_flag(g, fmt::format("barrier[{}] set", src));
      get_next(g, j + 1);
    });
  }

  // ---------------------------------------------------------------- layer0: comm blocks

  gpu::KernelSpec dispatch_comm_kernel(int g) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CometGpuPlan& pl = plan_->gpu(g);
    const uint32_t nc = pl.comm_blocks;
    s.comm_cursor.assign(nc, Cursor{});
    gpu::KernelSpec spec;
    spec.name = "comet_dispatch_comm";
    spec.blocks = nc;
    spec.shape = plan_->fused_shape();
    spec.sms = gpu::SmRange{0, nc};
    const uint64_t rb = c.model().row_bytes();
    spec.program = std::make_shared<gpu::FunctionProgram>([this, g, nc, rb](gpu::BlockState& b) -> Step {
      GpuState& s = gpu_[g];
      const CometGpuPlan& pl = plan_->gpu(g);
      if (b.step == 0) return Step::compute(Time::zero());  // fetched before dispatch: no side effects here
      Cursor& cur = s.comm_cursor[b.block];
      const size_t idx = static_cast<size_t>(b.block) + cur.job * nc;
      if (idx >= pl.jobs.size()) return Step::done();
      const CometJob& job = pl.jobs[idx];
      if (cur.sub == 0) {
        cur.sub = 1;
        // Local rows are copied (read + write); remote rows are read, then stored to the peer.
        return Step::memory(job.dst == g ? 2 * rb : rb);
      }
      cur.sub = 0;
      ++cur.job;
      s.comm_sm_min = std::min(s.comm_sm_min, b.sm);
      s.comm_sm_max = std::max(s.comm_sm_max, b.sm);
      if (!c_->phases(g).dispatch_start) c_->phases(g).dispatch_start = c_->sim().now();
      const CometGpuPlan& dp = plan_->gpu(job.dst);
      const gpu::SignalId flag = dp.tile_flags[dp.row_tile[job.pos]];
      if (job.dst == g) {
        row_in(g, job.pos);
        return Step::signal_add(flag, static_cast<int64_t>(rb));
      }
      return Step::store(static_cast<uint32_t>(job.dst), rb, RemoteMemory::tag(flag, job.pos));
    });
    return spec;
  }

  void write_arrived(int g, uint64_t code, uint64_t bytes) {
    GpuState& s = gpu_[g];
    const uint64_t rb = c_->model().row_bytes();
    if (code < kCometCombineCode) {
      if ((s.dispatch_arrived[code] += static_cast<uint32_t>(bytes)) == rb) row_in(g, code);
      return;
    }
    if ((partial_bytes(code) += static_cast<uint32_t>(bytes)) == rb) partial_in(g, code);
  }

  // The bytes of a combine partial in its owner's buffer so far, by the partial's code (a dense
  // array: a hash map of every partial was a fifth of the CPU at 64 GPUs x 4096 tokens).
  uint32_t& partial_bytes(uint64_t code) {
    const uint64_t n = static_cast<uint64_t>(c_->gpus());
    const uint64_t rel = code - kCometCombineCode;
    return partial_arrived_[plan_->partial_index(static_cast<int64_t>(rel / n), static_cast<int>(rel % n))];
  }

  // A dispatch row is complete in GPU g's buffer.
  void row_in(int g, uint64_t pos) {
    GpuState& s = gpu_[g];
    const CometGpuPlan& pl = plan_->gpu(g);
    fn_->row_in(g, pos);
    if (--s.tile_rows_left[pl.row_tile[pos]] == 0 && p_.dispatch == CometParams::Dispatch::CommBlocks) {
      mark_flag(g, fmt::format("tile flag {} complete", pl.row_tile[pos]));
    }
    if (--s.dispatch_rows_left == 0) c_->phases(g).dispatch_end = c_->sim().now();
  }

  // ---------------------------------------------------------------- GEMM1: polling tiles

  gpu::KernelSpec gemm1_kernel(int g) {
    const CometGpuPlan& pl = plan_->gpu(g);
    gpu::KernelSpec spec;
    spec.name = "comet_gemm1";
    spec.blocks = static_cast<uint32_t>(pl.gemm1_order.size());
    spec.shape = plan_->fused_shape();
    if (p_.dispatch == CometParams::Dispatch::CommBlocks) spec.sms = gpu::SmRange{pl.comm_blocks, 0};
    spec.on_done = [this, g] {
      Cluster& c = *c_;
      GpuState& s = gpu_[g];
      c.phases(g).gemm1_end = c.sim().now();
      if (s.first_gemm1_math) c.log(g, Activity::ExpertCompute, *s.first_gemm1_math, *s.last_gemm1_math);
    };
    const bool per_tile = p_.dispatch == CometParams::Dispatch::CommBlocks;
    spec.program = std::make_shared<gpu::FunctionProgram>([this, g, per_tile](gpu::BlockState& b) -> Step {
      const CometGpuPlan& pl = plan_->gpu(g);
      const gpu::GemmTile t = pl.gemm1->tile(pl.gemm1_order[b.block]);
      const uint32_t tile_row = pl.tile_row_base[t.group] + static_cast<uint32_t>(t.tile_row);
      // Waits: one per-tile flag (its rows' bytes), or one flag per source rank it needs.
      const uint32_t waits = per_tile ? 1 : pl.tile_max_distance[tile_row] + 1;
      if (b.step < waits) {
        if (per_tile) return Step::wait(pl.tile_flags[tile_row], static_cast<int64_t>(pl.tile_bytes[tile_row]), WaitMode::Poll);
        const int src = (g + static_cast<int>(b.step)) % c_->gpus();
        return Step::wait(pl.source_flags[src], 1, WaitMode::Poll);
      }
      if (b.step == waits) {
        gemm1_math(g, t, tile_row, b.sm);
        return Step::compute_memory(t.compute, t.hbm_bytes);
      }
      GpuState& s = gpu_[g];
      s.last_gemm1_math = c_->sim().now();
      return Step::done();
    });
    return spec;
  }

  void gemm1_math(int g, const gpu::GemmTile& t, uint32_t tile_row, int32_t sm) {
    GpuState& s = gpu_[g];
    if (!s.first_gemm1_math) s.first_gemm1_math = c_->sim().now();
    s.gemm1_sm_min = std::min(s.gemm1_sm_min, sm);
    fn_->gemm1(g, t, tile_row);
  }

  // ---------------------------------------------------------------- GEMM2 and gather-RS

  gpu::KernelSpec gemm2_kernel(int g) {
    const CometGpuPlan& pl = plan_->gpu(g);
    gpu::KernelSpec spec;
    spec.name = "comet_gemm2";
    spec.blocks = static_cast<uint32_t>(pl.gemm2_order.size());
    spec.shape = plan_->fused_shape();
    spec.sms = gpu::SmRange{static_cast<uint32_t>(p_.gather_rs_ctas), 0};
    spec.on_done = [this, g] {
      GpuState& s = gpu_[g];
      if (s.first_gemm2_math) c_->log(g, Activity::ExpertCompute, *s.first_gemm2_math, *s.last_gemm2_math);
    };
    spec.program = std::make_shared<gpu::FunctionProgram>([this, g](gpu::BlockState& b) -> Step {
      const CometGpuPlan& pl = plan_->gpu(g);
      GpuState& s = gpu_[g];
      if (b.step == 0) return Step::compute(Time::zero());  // fetched before dispatch: no side effects here
      const gpu::GemmTile t = pl.gemm2->tile(pl.gemm2_order[b.block]);
      if (b.step == 1) {
        if (!s.first_gemm2_math) s.first_gemm2_math = c_->sim().now();
        s.gemm2_sm_min = std::min(s.gemm2_sm_min, b.sm);
        fn_->gemm2(g, t);
        return Step::compute_memory(t.compute, t.hbm_bytes);
      }
      // Epilogue: count the tile into every column split it overlaps.
      const auto [first, last] = plan_->splits_of(t);
      const uint32_t split = first + (b.step - 2);
      if (split <= last) {
        if (++s.split_count[split] == pl.split_tiles[split]) mark_flag(g, fmt::format("split flag {} complete", split));
        return Step::signal_add(pl.split_flags[split], 1);
      }
      s.last_gemm2_math = c_->sim().now();
      return Step::done();
    });
    return spec;
  }

  gpu::KernelSpec gather_rs_kernel(int g) {
    GpuState& s = gpu_[g];
    const uint32_t n = static_cast<uint32_t>(p_.gather_rs_ctas);
    s.rs_cursor.assign(n, Cursor{});
    gpu::KernelSpec spec;
    spec.name = "comet_gather_rs";
    spec.blocks = n;
    spec.shape = plan_->fused_shape();
    spec.sms = gpu::SmRange{0, n};
    spec.program = std::make_shared<gpu::FunctionProgram>([this, g, n](gpu::BlockState& b) -> Step {
      GpuState& s = gpu_[g];
      const CometGpuPlan& pl = plan_->gpu(g);
      if (b.step == 0) return Step::compute(Time::zero());  // fetched before dispatch: no side effects here
      Cursor& cur = s.rs_cursor[b.block];
      const uint64_t eb = static_cast<uint64_t>(c_->model().dtype_bytes);
      for (;;) {
        if (cur.split >= plan_->splits()) return Step::done();
        if (cur.sub == 0) {  // wait for the split's GEMM2 tiles
          cur.sub = 1;
          cur.job = 0;
          if (!pl.experts.empty()) return Step::wait(pl.split_flags[cur.split], pl.split_tiles[cur.split], WaitMode::Poll);
        }
        const size_t idx = static_cast<size_t>(b.block) + cur.job * n;
        if (idx >= pl.combine_tokens.size()) {
          ++cur.split;
          cur.sub = 0;
          continue;
        }
        const CometCombineToken& tok = pl.combine_tokens[idx];
        const uint64_t bytes = plan_->split_cols(cur.split) * eb;
        if (cur.sub == 1) {  // read the token's local rows of this split
          cur.sub = 2;
          s.rs_sm_min = std::min(s.rs_sm_min, b.sm);
          s.rs_sm_max = std::max(s.rs_sm_max, b.sm);
          if (cur.split == 0 && !c_->phases(g).combine_start) c_->phases(g).combine_start = c_->sim().now();
          return Step::memory(bytes * tok.rows.size() + (tok.owner == g ? bytes : 0));
        }
        cur.sub = 1;
        ++cur.job;
        const uint64_t code = comet_partial_code(tok.token, g, c_->gpus());
        if (cur.split == 0) fn_->partial(g, tok, code);
        const gpu::SignalId in = plan_->gpu(tok.owner).combine_signal;
        if (tok.owner == g) {
          if ((partial_bytes(code) += static_cast<uint32_t>(bytes)) == c_->model().row_bytes()) partial_in(g, code);
          return Step::signal_add(in, static_cast<int64_t>(bytes));
        }
        return Step::store(static_cast<uint32_t>(tok.owner), bytes, RemoteMemory::tag(in, code));
      }
    });
    return spec;
  }

  // Every column split of one partial has landed in its owner's buffer.
  void partial_in(int owner, uint64_t code) {
    GpuState& s = gpu_[owner];
    fn_->partial_in(owner, code);
    if (--s.combine_rows_left == 0) c_->phases(owner).combine_end = c_->sim().now();
  }

  static constexpr uint64_t kProblemBytes = 64;  // one grouped-GEMM problem's arguments (sizes, pointers, strides)

  CometParams p_;
  Cluster* c_ = nullptr;
  std::unique_ptr<SharedKernels> k_;
  std::unique_ptr<RemoteMemory> remote_;
  std::unique_ptr<CometPlan> plan_;
  std::unique_ptr<StreamCollective> gather_probs_, gather_indices_, barrier_layer0_, barrier1_, barrier_end_, barrier_gets_;
  PerGpu<GpuState> gpu_;
  std::vector<uint32_t> partial_arrived_;  // per combine partial (CometPlan::partial_index): bytes landed
  std::unique_ptr<CometFunctional> fn_;  // does nothing in timing-only runs
};

}  // namespace

namespace {

// Two all-gathers and three barriers, a fourth with copy-engine gets (start()).
int comet_collectives(const Config& c) {
  return CometParams::from(c).dispatch == CometParams::Dispatch::CopyEngineGets ? 6 : 5;
}

// What comet sends in a layer, at flow fidelity one message per store or read request or
// response (overlap_flow_messages_bound). Dispatch: a comm block stores each row it sends to
// another GPU once (dispatch_comm_kernel: one job per row of a destination's buffer, at most the
// rows); with copy-engine gets each GPU has one get out at a time (get_next), a request and a
// response of up to 4 GiB each. Combine: per (token, GPU holding its rows) one store per column
// split (combine_kernel), at most the rows x splits. Rows: tokens x top_k x parallel.tp (the
// physical slots, moe/tp_layout.h).
std::optional<uint64_t> comet_flow_messages_bound(const Config& c) {
  const CometParams p = CometParams::from(c);
  const WorkloadConfig w = WorkloadConfig::from(c);
  const ModelShape m = ModelShape::from(c);
  const long double rows = static_cast<long double>(w.tokens) * static_cast<long double>(m.top_k()) *
                           static_cast<long double>(std::max<int64_t>(w.tp, 1));
  long double dispatch = rows;
  if (p.dispatch == CometParams::Dispatch::CopyEngineGets) {
    const long double get = static_cast<long double>(w.tokens) * static_cast<long double>(m.row_bytes());
    dispatch = static_cast<long double>(w.gpus) * 2 * (1 + std::floor(get / 4294967296.0L));
  }
  const long double combine = rows * static_cast<long double>(std::max<int64_t>(p.column_splits, 1));
  // Per pair: the probabilities (dtype) and int64 indices of the sender's top-k picks (at most
  // ceil(tokens / GPUs) tokens, comet_router.cpp), a flag per barrier.
  const auto n = std::max<int64_t>(w.gpus, 1);
  const int collectives = comet_collectives(c);
  const long double picks = static_cast<long double>((w.tokens + n - 1) / n) * static_cast<long double>(m.top_k());
  const long double pair_bytes = picks * static_cast<long double>(m.dtype_bytes + 8) + 8.0L * (collectives - 2);
  return overlap_flow_messages_bound(c, collectives, pair_bytes, dispatch + combine);
}

}  // namespace

SystemEntry comet_system_entry() {
  SystemEntry e{"comet", "Comet (MLSys'25): tile-level overlap in fused kernels with communication blocks and flag polling",
                CometParams::declare,
                [](const Config& c) -> std::unique_ptr<MoeSystem> { return std::make_unique<CometSystem>(CometParams::from(c)); },
                240,
                true};
  e.flow_messages_bound = comet_flow_messages_bound;
  e.state_bytes = [](const Config& c) -> uint64_t { return overlap_state_bytes(c, comet_collectives(c)); };
  return e;
}

}  // namespace moehub
