// `ccfuser` (CCFuser, PPoPP'25; code: WongHuLin/CCFuser `mix_moe`; docs/research/systems.md 6).
// Expert GEMM thread blocks pull their rows straight from peer memory:
//   prologue  FastMoE's gate and count path (platform/fastmoe_ops: NaiveGate with its blocking
//             `.cuda()`, expert_count); counts all-gather (NCCL); `.item()`, assign_pos,
//             `.cpu()` (three host syncs with the gate's); select_popular_expert's and
//             divide_into_block's CPU torch ops, host block planning (64-row blocks,
//             local/remote interleave) and 7 small H2D copies of the plan tensors;
//             local_scatter into the symmetric buffer; zeroed buffers; barrier.
//   GEMM1     moe_first_mm: thread blocks fetch remote 64-row blocks through the load path
//             (read_request / read_response packets: nvshmemx_get over NVLink P2P is executed
//             by the block's threads) and compute BM x BN column tiles of local and remote
//             blocks. Schedule `work_queue` (default): persistent blocks take items from a
//             queue (an atomicAdd each), so any SM computes any expert's tiles (the paper's
//             "dynamic expert reassignment across SMs", not visible in the code: an assumption)
//             and a tile of a remote block polls that block's ready flag. `static_pairs`: the
//             code's grid, one CTA per (local, remote) pair, fetch then compute, no flags.
//   GEMM2     moe_second_mm: the same items without fetches; a remote block's results are
//             stored back to its source rank from the epilogue (nvshmemx_put).
//   epilogue  barrier (every result landed), local_gather, weighting with the gate scores.
// docs/systems/ccfuser.md lists every constant and its source.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <unordered_map>

#include "gpu/memory_kernel.h"
#include "systems/ccfuser/ccfuser_functional.h"
#include "systems/ccfuser/ccfuser_plan.h"
#include "moe/workload.h"
#include "platform/fastmoe_ops.h"
#include "platform/moe_system.h"
#include "platform/overlap_common.h"
#include "platform/remote_memory.h"
#include "platform/shared_kernels.h"

namespace moehub {
namespace {

using gpu::Step;
using gpu::WaitMode;

class CcfuserSystem final : public MoeSystem {
 public:
  explicit CcfuserSystem(CcfuserParams p) : p_(p) {}

  void start(Cluster& cluster) override {
    c_ = &cluster;
    k_ = std::make_unique<SharedKernels>(cluster);
    remote_ = std::make_unique<RemoteMemory>(cluster);
    remote_->on_write([this](int g, uint64_t code, uint64_t bytes) { result_bytes_in(g, code, bytes); });
    plan_ = std::make_unique<CcfuserPlan>(cluster, p_);
    fn_ = CcfuserFunctional::make(cluster, *plan_, p_);
    const int n = cluster.gpus();
    counts_ = std::make_unique<StreamCollective>(
        cluster, "nccl_allgather_counts",
        StreamCollective::to_every_peer(n, static_cast<uint64_t>(cluster.model().experts()) * kCountBytes));
    barrier1_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_gemm1", StreamCollective::to_every_peer(n, kFlagBytes));
    barrier2_ = std::make_unique<StreamCollective>(cluster, "nvshmem_barrier_gemm2", StreamCollective::to_every_peer(n, kFlagBytes));
    gpu_.resize(n);
    for (int g = 0; g < n; ++g) start_gpu(g);
  }

  nlohmann::json stats(Cluster& cluster) override {
    nlohmann::json per = nlohmann::json::array();
    for (int g = 0; g < cluster.gpus(); ++g) {
      const CcfuserGpuPlan& pl = plan_->gpu(g);
      const gpu::GpuCounters& d = cluster.gpu(g).counters();
      per.push_back({{"gpu", g},
                     {"blocks", pl.blocks.size()},
                     {"pairs", pl.pairs.size()},
                     {"fetched_blocks", pl.fetch_blocks},
                     {"polls", d.polls},
                     {"loads", d.loads},
                     {"load_bytes", d.load_bytes},
                     {"gemm1_sms_used", gpu_[static_cast<size_t>(g)].sms_used.size()}});
    }
    return {{"schedule", p_.schedule == CcfuserParams::Schedule::WorkQueue ? "work_queue" : "static_pairs"},
            {"host_syncs_per_gpu", kHostSyncs},
            {"remote_reads", remote_->reads()},
            {"remote_read_bytes", remote_->read_bytes()},
            {"gpus", per}};
  }

 private:
  static constexpr uint64_t kCountBytes = 8;  // int64 expert counts (FastMoE count_by_gate)
  static constexpr uint64_t kFlagBytes = 8;
  static constexpr uint64_t kIndexBytes = 8;  // int64 pos / plan entries
  static constexpr int kHostSyncs = 3;        // the gate's .cuda(), .item(), .cpu() (functions.py:101, 105)
  // MixMOETransformerMLP's popular_expert_num (WongHuLin/CCFuser 3e1990e mix_moe/transformer.py:449).
  static constexpr int64_t kPopularExperts = 3;

  struct Cursor {
    int64_t item = -1;
    uint32_t sub = 0;
    uint32_t next = 0;  // static schedule: the next of the CTA's items
  };
  struct GpuState {
    std::vector<Cursor> g1, g2;
    uint64_t queue1 = 0, queue2 = 0;  // the work queues' heads (global atomics)
    std::vector<gpu::SignalId> ready;  // per block: fetched
    gpu::SignalId combine_in = 0;
    std::unordered_map<uint64_t, uint64_t> result_arrived;  // by block code
    uint64_t fetches_left = 0;
    std::vector<int32_t> sms_used;
    std::vector<uint8_t> sm_seen;
    std::optional<Time> first_math, last_math;
  };

  void start_gpu(int g) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CcfuserGpuPlan& pl = plan_->gpu(g);
    gpu::Gpu& dev = c.gpu(g);
    for (size_t b = 0; b < pl.blocks.size(); ++b) s.ready.push_back(dev.create_signal(fmt::format("ccfuser block {} ready", b)));
    s.combine_in = dev.create_signal("ccfuser results in");
    s.fetches_left = pl.fetch_blocks;
    s.sm_seen.assign(c.gpu_config().sm_count, 0);
    gpu::Stream& st = c.stream(g);
    const int64_t tokens = c.workload().tokens().count(g);
    // process_data (mix_moe/transformer.py:376-391): ensure_comm, NaiveGate, then
    // perpare_expert_assignment (mix_moe/functions.py:83-105), FastMoE's count_by_gate with an
    // all-gather of the counts.
    c.host(g).framework_op();
    launch_fastmoe_gate(c, *k_, g, st, tokens);
    launch_fastmoe_count(c, *k_, g, st, tokens);
    c.host(g).framework_op();
    c.host(g).nccl_call();
    const gpu::BlockShape small = k_->memory_shape();
    c.launch(g, st, Activity::Communication, counts_->kernel(g, small));
    launch_fastmoe_positions(c, *k_, g, st, tokens);
    // reshape, then .cpu() of all counts (functions.py:104-105) and the host's block planning.
    c.host(g).framework_op();
    c.host(g).framework_op();
    const uint64_t all_counts = static_cast<uint64_t>(c.gpus()) * static_cast<uint64_t>(c.model().experts()) * kCountBytes;
    const Time plan_time = p_.host_plan_base + p_.host_plan_per_block * static_cast<int64_t>(pl.blocks.size());
    c.host_sync(g, st, all_counts, plan_time, [this, g] { after_plan(g); });
  }

  // Torch ops on the CPU counts before the plan tensors are built (mix_moe/transformer.py,
  // 3e1990e): select_popular_expert's sum, topk, tolist (:366-368); divide_into_block's cumsum,
  // zeros, cat, tensor, index_select, tolist (:156-159), the popular rows' index and the
  // indices' tolist (:162-163), per popular expert its row count's index, // and % 64 with its
  // != 0 (:165-170) and, when that is not 0, % 64, * 64 and + (:171), then the index_put,
  // tensor, index_select, tolist (:174-176). Popular experts: the most loaded by all ranks'
  // counts (torch.topk; ties to the lower index here).
  int64_t cpu_plan_ops(int g) const {
    const Workload& w = c_->workload();
    const int64_t experts = c_->model().experts();
    std::vector<std::pair<int64_t, int64_t>> load;  // (-count, expert)
    for (int64_t e = 0; e < experts; ++e) {
      int64_t n = 0;
      for (int src = 0; src < c_->gpus(); ++src) n += w.plan().rows_to_expert(src, e);
      load.emplace_back(-n, e);
    }
    std::sort(load.begin(), load.end());
    int64_t ops = 3 + 8 + 4;
    for (int64_t i = 0; i < std::min(kPopularExperts, experts); ++i) {
      ops += 4 + (w.plan().rows_to_expert(g, load[static_cast<size_t>(i)].second) % p_.block_rows != 0 ? 3 : 0);
    }
    return ops;
  }

  void after_plan(int g) {
    Cluster& c = *c_;
    const CcfuserGpuPlan& pl = plan_->gpu(g);
    gpu::Stream& st = c.stream(g);
    const Workload& w = c.workload();
    const uint64_t br = static_cast<uint64_t>(p_.block_rows);
    for (int64_t i = 0, n = cpu_plan_ops(g); i < n; ++i) c.host(g).framework_op();
    for (int64_t i = 0; i < p_.plan_tensors; ++i) {
      host_to_device_copy(c, g, st, fmt::format("H2D plan tensor {}", i), pl.blocks.size() * kIndexBytes);
    }
    gpu::KernelSpec scatter = k_->permute(g, static_cast<uint64_t>(w.plan().rows_from(g)), "local_scatter");
    scatter.on_done = [this, g] { fn_->scatter(g); };
    c.launch(g, st, Activity::DataShuffle, std::move(scatter));
    const uint64_t slots = pl.blocks.size() * br;
    const uint64_t eb = static_cast<uint64_t>(c.model().dtype_bytes);
    const uint64_t zero = slots * eb * (static_cast<uint64_t>(c.model().hidden) * 2 + static_cast<uint64_t>(c.model().gemm1_cols()));
    c.launch(g, st, Activity::DataShuffle, k_->memory(g, "zero_buffers", zero));
    const gpu::BlockShape small = k_->memory_shape();
    c.launch(g, st, Activity::Communication, barrier1_->kernel(g, small));
    if (!pl.blocks.empty()) {
      gpu::KernelSpec g1 = fused_kernel(g, 1);
      g1.on_done = [this, g] {
        GpuState& s = gpu_[g];
        c_->phases(g).gemm1_end = c_->sim().now();
        if (s.first_math) c_->log(g, Activity::ExpertCompute, *s.first_math, *s.last_math);
        s.first_math.reset();
      };
      c.launch(g, st, Activity::Polling, std::move(g1));
      c.launch(g, st, Activity::ExpertCompute, k_->activation(g, slots));
      gpu::KernelSpec g2 = fused_kernel(g, 2);
      g2.on_done = [this, g] {
        GpuState& s = gpu_[g];
        if (s.first_math) c_->log(g, Activity::ExpertCompute, *s.first_math, *s.last_math);
      };
      c.launch(g, st, Activity::Polling, std::move(g2));
    }
    const int64_t expected = static_cast<int64_t>(pl.combine_bytes);
    c.launch(g, st, Activity::Communication, barrier2_->kernel(g, small, std::make_pair(gpu_[g].combine_in, expected)));
    const uint64_t tokens = static_cast<uint64_t>(w.tokens().count(g));
    c.launch(g, st, Activity::DataShuffle, k_->permute(g, static_cast<uint64_t>(w.plan().rows_from(g)), "local_gather"));
    gpu::KernelSpec sc = k_->scaling(g, tokens);
    sc.on_done = [this, g] {
      fn_->outputs(g);
      c_->layer_done(g);
    };
    c.launch(g, st, Activity::Scaling, std::move(sc));
  }

  // ---------------------------------------------------------------- the fused kernels

  gpu::KernelSpec fused_kernel(int g, int which) {
    Cluster& c = *c_;
    GpuState& s = gpu_[g];
    const CcfuserGpuPlan& pl = plan_->gpu(g);
    gpu::KernelSpec spec;
    spec.name = which == 1 ? "moe_first_mm" : "moe_second_mm";
    spec.shape.threads = static_cast<uint32_t>(p_.block_threads);
    // A block's compute step runs at the SM's whole tensor rate, so one per SM, like the
    // grouped GEMM (gpu.gemm_blocks_per_sm).
    spec.shape.max_blocks_per_sm = c.gpu_config().gemm_blocks_per_sm;
    uint32_t grid;
    if (p_.schedule == CcfuserParams::Schedule::WorkQueue) {
      spec.persistent = true;
      grid = c.gpu_config().sm_count * c.gpu(g).blocks_per_sm(spec.shape);
    } else {
      grid = static_cast<uint32_t>(pl.pairs.size());
    }
    spec.blocks = grid;
    (which == 1 ? s.g1 : s.g2).assign(grid, Cursor{});
    spec.program = std::make_shared<gpu::FunctionProgram>([this, g, which](gpu::BlockState& b) { return next(g, which, b); });
    return spec;
  }

  Step next(int g, int which, gpu::BlockState& b) {
    if (b.step == 0) return Step::compute(Time::zero());  // fetched before dispatch: no side effects here
    GpuState& s = gpu_[g];
    const CcfuserGpuPlan& pl = plan_->gpu(g);
    Cursor& cur = (which == 1 ? s.g1 : s.g2)[b.block];
    const auto& items = which == 1 ? pl.gemm1_items : pl.gemm2_items;
    const bool queue = p_.schedule == CcfuserParams::Schedule::WorkQueue;
    for (;;) {
      if (cur.item < 0) {
        if (queue) {
          if (cur.sub == 0) {  // atomicAdd on the queue head: one L2 round trip
            cur.sub = 1;
            return Step::compute(c_->gpu_config().poll_latency);
          }
          cur.sub = 0;
          uint64_t& head = which == 1 ? s.queue1 : s.queue2;
          if (head >= items.size()) return Step::done();
          cur.item = static_cast<int64_t>(head++);
        } else {
          const auto& mine = (which == 1 ? pl.gemm1_by_pair : pl.gemm2_by_pair)[b.block];
          if (cur.next >= mine.size()) return Step::done();
          cur.item = mine[cur.next++];
        }
      }
      const CcfuserItem& it = items[static_cast<size_t>(cur.item)];
      const CcfuserBlock& blk = pl.blocks[it.block];
      const uint64_t eb = static_cast<uint64_t>(c_->model().dtype_bytes);
      const uint64_t hidden = static_cast<uint64_t>(c_->model().hidden);
      if (it.kind == CcfuserItem::Kind::Fetch) {
        if (cur.sub == 0) {
          cur.sub = 1;
          if (!c_->phases(g).dispatch_start) c_->phases(g).dispatch_start = c_->sim().now();
          return Step::load(static_cast<uint32_t>(blk.source), blk.rows.size() * hidden * eb, 0);
        }
        fetched(g, it.block);
        if (TraceRecorder* t = c_->trace()) {
          t->instant(g, t->track(g, "flags"), fmt::format("block {} ready", it.block), "flag", c_->sim().now());
        }
        cur.item = -1;
        cur.sub = 0;
        return Step::signal_add(s.ready[it.block], 1);
      }
      switch (cur.sub) {
        case 0:
          cur.sub = 1;
          // Only a remote block's GEMM1 tiles need its fetch; in the static schedule the same
          // CTA fetched it just before.
          if (which == 1 && blk.remote && queue) return Step::wait(s.ready[it.block], 1, WaitMode::Poll);
          [[fallthrough]];
        case 1: {
          cur.sub = 2;
          math(g, which, it, b.sm);
          const auto [compute, bytes] = item_cost(which, pl, blk, it.col);
          return Step::compute_memory(compute, bytes);
        }
        case 2: {
          cur.sub = 3;
          s.last_math = c_->sim().now();
          if (which == 2) {
            const uint64_t cols = item_cols(it.col, hidden);
            const uint64_t bytes = blk.rows.size() * cols * eb;
            const uint64_t code = pl.code_base + it.block;
            const gpu::SignalId in = gpu_[blk.source].combine_in;
            if (!c_->phases(g).combine_start) c_->phases(g).combine_start = c_->sim().now();
            if (blk.remote) return Step::store(static_cast<uint32_t>(blk.source), bytes, RemoteMemory::tag(in, code));
            result_bytes_in(g, code, bytes);
            return Step::signal_add(in, static_cast<int64_t>(bytes));
          }
          [[fallthrough]];
        }
        default:
          cur.item = -1;
          cur.sub = 0;
          continue;
      }
    }
  }

  uint64_t item_cols(uint32_t col, uint64_t n) const {
    const uint64_t tn = static_cast<uint64_t>(p_.tile_n);
    return std::min(tn, n - col * tn);
  }

  // One BM x BN tile over the whole K (myHGEMMAlignedV5): padded FLOPs at one SM's tensor rate;
  // compulsory traffic shared as in gpu::GemmModel (A once per row of tiles, the expert's
  // weights once per column of tiles, C once).
  std::pair<Time, uint64_t> item_cost(int which, const CcfuserGpuPlan& pl, const CcfuserBlock& blk, uint32_t col) const {
    const ModelShape& m = c_->model();
    const uint64_t k = static_cast<uint64_t>(which == 1 ? m.hidden : m.ffn_hidden);
    const uint64_t n = static_cast<uint64_t>(which == 1 ? m.gemm1_cols() : m.hidden);
    const uint64_t bk = static_cast<uint64_t>(p_.tile_k);
    const uint64_t k_pad = (k + bk - 1) / bk * bk;
    const uint64_t bm = static_cast<uint64_t>(p_.block_rows), bn = static_cast<uint64_t>(p_.tile_n);
    const uint64_t eb = static_cast<uint64_t>(m.dtype_bytes);
    const uint64_t tiles_n = plan_->tiles_n(n);
    const uint64_t rows = blk.rows.size();
    const uint64_t cols = item_cols(col, n);
    const uint64_t share = pl.blocks_of_expert[static_cast<size_t>(blk.local_expert)];
    const uint64_t bytes = (rows * k * eb + tiles_n - 1) / tiles_n + (k * cols * eb + share - 1) / share + rows * cols * eb;
    const Time compute = Bandwidth::bytes_per_second(c_->gpu_config().sm_tensor_flops_per_second()).transfer_time(2 * bm * bn * k_pad);
    return {compute, bytes};
  }

  // ---------------------------------------------------------------- arrivals

  void fetched(int g, uint32_t block) {
    GpuState& s = gpu_[g];
    if (--s.fetches_left == 0) c_->phases(g).dispatch_end = c_->sim().now();
    fn_->fetched(g, block);
  }

  void math(int g, int which, const CcfuserItem& it, int32_t sm) {
    GpuState& s = gpu_[g];
    if (!s.first_math) s.first_math = c_->sim().now();
    if (sm >= 0 && !s.sm_seen[static_cast<size_t>(sm)]) {
      s.sm_seen[static_cast<size_t>(sm)] = 1;
      s.sms_used.push_back(sm);
    }
    fn_->math(g, which, it);
  }

  // Result bytes of a block landed in its source GPU's buffer (`g` is that GPU).
  void result_bytes_in(int g, uint64_t code, uint64_t bytes) {
    const auto [holder, block] = plan_->block_of_code(code);
    const CcfuserBlock& blk = plan_->gpu(holder).blocks[block];
    const int owner = blk.source;
    GpuState& s = gpu_[owner];
    (void)g;
    const uint64_t full = blk.rows.size() * c_->model().row_bytes();
    if ((s.result_arrived[code] += bytes) < full) return;
    fn_->results_landed(code);
    c_->phases(owner).combine_end = c_->sim().now();
  }

  CcfuserParams p_;
  Cluster* c_ = nullptr;
  std::unique_ptr<SharedKernels> k_;
  std::unique_ptr<RemoteMemory> remote_;
  std::unique_ptr<CcfuserPlan> plan_;
  std::unique_ptr<StreamCollective> counts_, barrier1_, barrier2_;
  PerGpu<GpuState> gpu_;
  std::unique_ptr<CcfuserFunctional> fn_;  // does nothing in timing-only runs
};

}  // namespace

namespace {

constexpr int kCcfuserCollectives = 3;  // the count all-gather and two barriers (start())

// What ccfuser sends in a layer, at flow fidelity one message per store or read request or
// response (overlap_flow_messages_bound). The plan cuts each (physical expert, source GPU) row
// range into blocks of block_rows (CcfuserPlan), so there are at most rows / block_rows + ranges
// blocks, and never more than the rows; ranges: at most physical experts x GPUs. A remote
// block is fetched with one read (a request and a response) and returns its GEMM2 result as one
// store per column tile of the hidden width (ceil(hidden / tile_n)).
std::optional<uint64_t> ccfuser_flow_messages_bound(const Config& c) {
  const CcfuserParams p = CcfuserParams::from(c);
  const WorkloadConfig w = WorkloadConfig::from(c);
  const ModelShape m = ModelShape::from(c);
  const long double rows = static_cast<long double>(w.tokens) * static_cast<long double>(m.top_k());
  const long double ranges = static_cast<long double>(m.experts() + w.redundant_experts) * static_cast<long double>(w.gpus);
  const long double blocks =
      std::min(rows, std::ceil(rows / static_cast<long double>(std::max<int64_t>(p.block_rows, 1))) + std::min(rows, ranges));
  const long double tiles = std::ceil(static_cast<long double>(m.hidden) / static_cast<long double>(std::max<int64_t>(p.tile_n, 1)));
  // Per pair: the int64 expert counts (at most the physical experts) and a flag per barrier.
  const long double pair_bytes = static_cast<long double>(m.experts() + w.redundant_experts) * 8 + 8.0L * 2;
  return overlap_flow_messages_bound(c, kCcfuserCollectives, pair_bytes, blocks * (2 + tiles));
}

}  // namespace

SystemEntry ccfuser_system_entry() {
  SystemEntry e{"ccfuser", "CCFuser (PPoPP'25): GEMM thread blocks pull rows from peer memory, fused with the all-to-all",
                CcfuserParams::declare,
                [](const Config& c) -> std::unique_ptr<MoeSystem> { return std::make_unique<CcfuserSystem>(CcfuserParams::from(c)); },
                64, false,
                // docs/systems/ep-tp.md
                "CCFuser's MixMOE partitions whole experts over world_size ranks and takes no process group "
                "(WongHuLin/CCFuser @3e1990e mix_moe/mix_moe/layers.py L33-60)"};
  e.flow_messages_bound = ccfuser_flow_messages_bound;
  e.state_bytes = [](const Config& c) -> uint64_t { return overlap_state_bytes(c, kCcfuserCollectives); };
  return e;
}

}  // namespace moehub
