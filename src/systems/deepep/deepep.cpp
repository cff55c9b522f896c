// `deepep`: DeepEP normal-mode intranode dispatch and combine (V1) as Megatron-Core's flex
// token dispatcher uses them (docs/research/systems.md section 4; docs/systems.md). Per GPU:
//   routing; the flex dispatcher's top-k metadata; get_dispatch_layout (comm stream);
//   notify_dispatch (count stores into every peer + barriers); the host spins on the mapped
//   received-token counter; the dispatch kernel (num_sms SMs, chunked stores into per-channel
//   rings, receivers copy into recv_x); Megatron's permute to expert-major; GEMM1, weighted
//   activation, GEMM2; unpermute back to DeepEP order (each received token's local expert rows
//   summed); cached_notify_combine; the combine kernel (rows pushed back into the source's
//   rings, reduced there into the layer output).

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "config/param_table.h"
#include "config/run_params.h"
#include "gpu/gpu_config.h"
#include "net/send_windows.h"
#include "sim/error.h"
#include "systems/deepep/deepep_functional.h"
#include "systems/deepep/deepep_internode.h"
#include "systems/deepep/deepep_internode_plan.h"
#include "systems/deepep/deepep_kernels.h"
#include "systems/deepep/deepep_limits.h"
#include "systems/deepep/deepep_params.h"
#include "systems/deepep/deepep_ll_functional.h"
#include "systems/deepep/deepep_low_latency.h"
#include "systems/deepep/deepep_plan.h"
#include "platform/megatron_permute.h"
#include "platform/megatron_router.h"
#include "platform/moe_system.h"
#include "platform/shared_kernels.h"

namespace moehub {
namespace {

namespace mp = megatron_permute;
constexpr uint64_t kIntBytes = 4;  // int32 counts, offsets, source indices
constexpr uint64_t kLlHeaderBytes = 16;  // internode_ll.cu:178-181: an int4 before each dispatch message
constexpr uint64_t kSourceMetaBytes = 8;  // internode.cu SourceMeta: src_rdma_rank, is_token_in_nvl_rank_bits

void declare_deepep_params(ParamRegistry& r) {
  DeepEpParams::table().declare(r);
  DeepEpInternodeParams::table().declare(r);
  DeepEpLowLatencyParams::table().declare(r);
}

class DeepEpSystem final : public MoeSystem {
 public:
  explicit DeepEpSystem(DeepEpParams p) : p_(p) {}

  // What the SM-issued path costs: polls by the spinning warp groups and stores to peers.
  nlohmann::json stats(Cluster& cluster) override {
    gpu::GpuCounters n;
    for (int g = 0; g < cluster.gpus(); ++g) gpu::GpuCounters::table().add(n, cluster.gpu(g).counters());
    nlohmann::json j{{"polls", n.polls}, {"stores", n.stores}, {"store_bytes", n.store_bytes}, {"store_refusals", n.store_refusals}};
    if (ll_) return ll_stats(cluster, j);
    j["deepep_dispatch_GBps"] = deepep_rate(cluster, true);
    j["deepep_combine_GBps"] = deepep_rate(cluster, false);
    if (inter_) {
      // test_internode.py: RDMA bytes are each token once per destination node, its own included.
      j["deepep_dispatch_rdma_GBps"] = deepep_rate(cluster, true, true);
      j["deepep_combine_rdma_GBps"] = deepep_rate(cluster, false, true);
    }
    return j;
  }

  // DeepEP's own convention (tests/test_intranode.py): the tokens a rank receives, deduplicated
  // per rank and its own included (recv_x), times the row bytes, over the kernel's time; mean
  // over ranks. Unlike dispatch_GBps it counts local rows and one copy per rank, not per expert.
  // With `rdma`, tests/test_internode.py's RDMA convention: the tokens a rank sends over RDMA,
  // once per destination node (its own included), times the row bytes.
  nlohmann::json deepep_rate(Cluster& cluster, bool dispatch, bool rdma = false) const {
    double sum = 0;
    int ranks = 0;
    const uint64_t row = static_cast<uint64_t>(cluster.model().row_bytes());
    for (int d = 0; d < cluster.gpus(); ++d) {
      const PhaseMarks& p = cluster.phases(d);
      const std::optional<Time>& start = dispatch ? p.dispatch_start : p.combine_start;
      const std::optional<Time>& end = dispatch ? p.dispatch_end : p.combine_end;
      if (!start || !end || *end <= *start) continue;
      const uint64_t tokens = rdma ? static_cast<uint64_t>(inter_plan_.rdma_tokens(d)) : plan_.recv_token[static_cast<size_t>(d)].size();
      sum += static_cast<double>(tokens * row) / (*end - *start).seconds() / 1e9;
      ++ranks;
    }
    return ranks ? nlohmann::json(sum / ranks) : nlohmann::json(nullptr);
  }

  void start(Cluster& cluster) override {
    c_ = &cluster;
    const int n = cluster.gpus();
    k_ = std::make_unique<SharedKernels>(cluster);
    const Workload& w = cluster.workload();
    if (p_.mode == DeepEpMode::LowLatency) {
      start_low_latency();
      for (int g = 0; g < n; ++g) issue_low_latency(g);
      return;
    }
    plan_ = make_deepep_plan(w, static_cast<int>(p_.num_sms / 2));
    for (int g = 0; g < n; ++g) experts_.push_back(make_deepep_expert_rows(w, plan_, g));
    fn_ = DeepEpFunctional::make(cluster, plan_, experts_);
    gpus_.resize(n);
    for (int g = 0; g < n; ++g) {
      gpus_[g].comm = &cluster.gpu(g).create_stream("deepep_comm");
      notify_barrier_.push_back(cluster.gpu(g).create_signal("notify_dispatch barrier"));
      combine_barrier_.push_back(cluster.gpu(g).create_signal("cached_notify_combine barrier"));
    }

    // GPUs on several nodes run DeepEP's internode kernels; one NVLink domain its intranode
    // kernels, also beyond their 8 ranks (NUM_MAX_NVL_PEERS: the model extends the same
    // mechanism over a larger domain, docs/systems/deepep.md).
    const NetConfig& net = cluster.network().config();
    if (net.scale_out()) {
      start_internode(net.gpus_per_node);
    } else {
      start_intranode();
    }
    for (int g = 0; g < n; ++g) issue_until_spin(g);
  }

 private:
  // ---- low-latency mode (docs/systems/deepep.md "Low-latency kernels") ----
  void start_low_latency() {
    Cluster& c = *c_;
    const ModelShape& m = c.model();
    ll_plan_ = make_deepep_ll_plan(c.workload(), p_.ll.max_dispatch_tokens);
    LlKernelConfig k;
    k.device_sms = c.gpu_config().sm_count;
    k.row_bytes = static_cast<uint64_t>(m.row_bytes());
    // internode_ll.cu:181: an int4 header (source index, 3 reserved ints), then the row, in FP8
    // with one float scale per 128 channels, or as it is.
    const uint64_t hidden = static_cast<uint64_t>(m.hidden);
    const uint64_t payload = p_.ll.dispatch_fp8 ? hidden + (hidden + 127) / 128 * mp::kProbBytes : k.row_bytes;
    k.msg_bytes = kLlHeaderBytes + payload;
    k.recv_row_bytes = payload + kIntBytes;  // packed_recv_x (+ scales) and packed_recv_src_info (:428-459)
    k.topk_idx_bytes = mp::kLongBytes;       // topk_idx_t is int64 unless built with TOPK_IDX_BITS=32 (configs.cuh:65-70)
    ll_fn_ = DeepEpLlFunctional::make(c, ll_plan_);
    DeepEpLowLatency::Hooks h;
    h.dispatch_recv = [this](int g, int le, int src) { ll_fn_->dispatch_recv(g, le, src); };
    h.combine_token = [this](int g, int64_t t) { ll_fn_->combine_token(g, t); };
    ll_ = std::make_unique<DeepEpLowLatency>(c, ll_plan_, k, std::move(h));
    ll_msg_bytes_ = k.msg_bytes;
  }

  // The layer as an inference engine runs it on the compute stream: router, low_latency_dispatch
  // (send and receive in one kernel, no host synchronisation), the experts on packed_recv_x,
  // low_latency_combine (the top-k weights applied in its reduction).
  void issue_low_latency(int g) {
    Cluster& c = *c_;
    gpu::Stream& s = c.stream(g);
    ll_fn_->input(g);
    launch_megatron_router(c, *k_, g, s, c.workload().tokens().count(g));
    auto id = std::make_shared<gpu::KernelId>();
    gpu::KernelSpec disp = ll_->dispatch(g);
    disp.on_done = [this, g, id] {
      c_->phases(g).dispatch_start = *c_->gpu(g).kernel_times(*id).started;
      c_->phases(g).dispatch_end = c_->sim().now();
    };
    c.host(g).framework_op();
    *id = c.launch(g, s, Activity::Communication, std::move(disp));
    const std::vector<uint64_t>& per_expert = ll_plan_.per_expert[g];
    uint64_t rows = 0;
    for (uint64_t r : per_expert) rows += r;
    if (rows > 0) {
      gpu::KernelSpec g1 = k_->gemm1_model(per_expert).kernel("gemm1");
      g1.on_done = [this, g] {
        c_->phases(g).gemm1_end = c_->sim().now();
        ll_fn_->gemm1(g);
      };
      op(g, s, Activity::ExpertCompute, std::move(g1));
      op(g, s, Activity::ExpertCompute, k_->activation(g, rows));
      gpu::KernelSpec g2 = k_->gemm2_model(per_expert).kernel("gemm2");
      g2.on_done = [this, g] { ll_fn_->gemm2(g); };
      op(g, s, Activity::ExpertCompute, std::move(g2));
    }
    auto cid = std::make_shared<gpu::KernelId>();
    gpu::KernelSpec comb = ll_->combine(g);
    comb.on_done = [this, g, cid] {
      c_->phases(g).combine_start = *c_->gpu(g).kernel_times(*cid).started;
      c_->phases(g).combine_end = c_->sim().now();
      c_->layer_done(g);
    };
    c.host(g).framework_op();
    *cid = c.launch(g, s, Activity::Communication, std::move(comb));
  }

  // tests/test_low_latency.py: per rank, its valid selections times the message bytes
  // (dispatch) or the BF16 row (combine) over the kernel's time; and the kernels' times. Means
  // over ranks.
  nlohmann::json ll_stats(Cluster& cluster, nlohmann::json j) const {
    const uint64_t row = static_cast<uint64_t>(cluster.model().row_bytes());
    for (bool dispatch : {true, false}) {
      double gbps = 0, us = 0;
      int ranks = 0;
      for (int g = 0; g < cluster.gpus(); ++g) {
        const PhaseMarks& p = cluster.phases(g);
        const std::optional<Time>& start = dispatch ? p.dispatch_start : p.combine_start;
        const std::optional<Time>& end = dispatch ? p.dispatch_end : p.combine_end;
        if (!start || !end || *end <= *start) continue;
        const double bytes = static_cast<double>(ll_plan_.selections(g)) * static_cast<double>(dispatch ? ll_msg_bytes_ : row);
        gbps += bytes / (*end - *start).seconds() / 1e9;
        us += (*end - *start).seconds() * 1e6;
        ++ranks;
      }
      const std::string kernel = dispatch ? "deepep_ll_dispatch" : "deepep_ll_combine";
      j[kernel + "_GBps"] = ranks ? nlohmann::json(gbps / ranks) : nlohmann::json(nullptr);
      j[kernel + "_us"] = ranks ? nlohmann::json(us / ranks) : nlohmann::json(nullptr);
    }
    return j;
  }

  // GPUs on several nodes: DeepEP's internode kernels (docs/systems/deepep.md "Internode").
  void start_internode(int per_node) {
    Cluster& cluster = *c_;
    const uint64_t row = static_cast<uint64_t>(cluster.model().row_bytes());
    const uint64_t topk = static_cast<uint64_t>(cluster.model().top_k());
    const int nodes = cluster.gpus() / per_node;
    inter_plan_ = make_deepep_internode_plan(plan_, per_node, p_.internode.d.rdma_chunk);
    InternodeKernelConfig k = DeepEpInternode::config(p_.internode, p_.num_sms, nodes);
    // get_num_bytes_per_token (internode.cu:42-46): the row, SourceMeta (two int32), int32
    // top-k indices and fp32 weights (dispatch) or the weights alone (combine), 16-byte aligned.
    k.dispatch_token_bytes = align16(row + kSourceMetaBytes + topk * (kIntBytes + mp::kProbBytes));
    k.combine_token_bytes = align16(row + kSourceMetaBytes + topk * mp::kProbBytes);
    k.row_bytes = row;
    const uint32_t groups = static_cast<uint32_t>(nodes + per_node);  // warp groups per CTA, both kernels
    if (cluster.gpu_config().max_blocks_per_sm && groups > cluster.gpu_config().max_blocks_per_sm) {
      throw UserError("run.gpus", "DeepEP internode kernels need " + std::to_string(groups) +
                                      " warp groups per SM here, more than gpu.max_blocks_per_sm");
    }
    DeepEpInternode::Hooks h;
    h.dispatch_token = [this](int g, int c, int src, int64_t i) { fn_->dispatch_chunk(g, c, src, i, 1); };
    h.combine_token = [this](int g, int c, int e, int64_t i) { fn_->combine_chunk(g, c, e, i, 1); };
    inter_ = std::make_unique<DeepEpInternode>(cluster, plan_, inter_plan_, k, std::move(h));
  }

  static uint64_t align16(uint64_t b) { return (b + 15) / 16 * 16; }

  // One NVLink domain: DeepEP's intranode kernels.
  void start_intranode() {
    Cluster& cluster = *c_;
    const int n = cluster.gpus();
    const Workload& w = cluster.workload();
    const uint64_t row = static_cast<uint64_t>(w.model().row_bytes());
    const uint64_t topk = static_cast<uint64_t>(w.model().top_k());
    ChannelKernelConfig d;
    d.name = "deepep_dispatch";
    d.num_sms = p_.num_sms;
    d.threads = p_.kernel_threads;
    d.chunk_tokens = p_.dispatch_chunk;
    d.ring_tokens = p_.dispatch_ring;
    // x, then the source index (int32), top-k indices (int64) and weights (fp32).
    d.token_bytes = row + kIntBytes + topk * (mp::kLongBytes + mp::kProbBytes);
    d.row_bytes = row;
    DeepEpChannelKernel::Hooks dh;
    dh.recv_bytes = [this](int, int, int, int64_t, int64_t count) { return 2 * static_cast<uint64_t>(count) * dispatch_->token_bytes(); };
    dh.on_chunk = [this](int g, int c, int s, int64_t first, int64_t count) { fn_->dispatch_chunk(g, c, s, first, count); };
    dispatch_ = std::make_unique<Transfer>(cluster, d, plan_.counts, dh);

    ChannelKernelConfig b = d;
    b.name = "deepep_combine";
    b.chunk_tokens = p_.combine_chunk;
    b.ring_tokens = p_.combine_ring;
    b.token_bytes = row + topk * mp::kProbBytes;  // the expert output row and the top-k weights
    ChannelCounts back = plan_.counts;            // the expert side returns what it received
    for (int s = 0; s < n; ++s) {
      for (int c = 0; c < plan_.channels; ++c) {
        for (int dd = 0; dd < n; ++dd) back.at(dd, c, s) = plan_.counts.at(s, c, dd);
      }
    }
    DeepEpChannelKernel::Hooks bh;
    // The receiver reads each contribution once and writes each token's sum once (charged to
    // the group of the token's lowest contributing rank).
    bh.recv_bytes = [this, row](int g, int c, int src, int64_t first, int64_t count) {
      uint64_t writes = 0;
      const auto& toks = plan_.send(g, src)[static_cast<size_t>(c)];
      const int64_t begin = c_->workload().tokens().begin(g);
      for (int64_t i = first; i < first + count; ++i) {
        if (plan_.lowest_rank[g][static_cast<size_t>(toks[static_cast<size_t>(i)] - begin)] == src) ++writes;
      }
      return static_cast<uint64_t>(count) * combine_->token_bytes() + writes * row;
    };
    bh.on_chunk = [this](int g, int c, int src, int64_t first, int64_t count) { fn_->combine_chunk(g, c, src, first, count); };
    combine_ = std::make_unique<Transfer>(cluster, b, back, bh);
  }

  // A channel kernel with its per-token store size at hand.
  struct Transfer {
    Transfer(Cluster& c, const ChannelKernelConfig& cfg, const ChannelCounts& counts, DeepEpChannelKernel::Hooks h)
        : bytes(cfg.token_bytes), kernel(c, cfg, counts, std::move(h)) {}
    uint64_t token_bytes() const { return bytes; }
    uint64_t bytes;
    DeepEpChannelKernel kernel;
  };
  struct GpuState {
    gpu::Stream* comm = nullptr;
    bool host_waiting = false;
    bool counter_visible = false;
    Time host_reached;
  };

  void op(int g, gpu::Stream& s, Activity what, gpu::KernelSpec spec) {
    c_->host(g).framework_op();
    c_->launch(g, s, what, std::move(spec));
  }
  // `to` waits for everything issued on `from` so far (DeepEP's stream_wait).
  void stream_wait(int g, gpu::Stream& to, gpu::Stream& from, const char* name) {
    const gpu::EventId e = c_->gpu(g).create_event(name);
    c_->host(g).record(from, e);
    c_->host(g).wait(to, e);
  }

  void issue_until_spin(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    const uint64_t e = static_cast<uint64_t>(w.model().experts());
    const uint64_t k = static_cast<uint64_t>(w.model().top_k());
    const uint64_t n = static_cast<uint64_t>(c.gpus());
    gpu::Stream& s = c.stream(g);
    gpu::Stream& comm = *gpus_[g].comm;
    fn_->input(g);
    launch_megatron_router(c, *k_, g, s, static_cast<int64_t>(t));
    if (w.tp().tp() > 1) {
      // EP+TP: _initialize_metadata expands the [T, E] routing map and probs over the TP group
      // to [T, TP x EP, E_l], so that DeepEP dispatches to TP x E shard experts with k x TP
      // picks (NVIDIA/Megatron-LM @d98e8a64 token_dispatcher.py L1836-1842, L1893-1920); the
      // reshape of each expanded view is a copy. Every shape below is the shards'.
      const uint64_t logical = static_cast<uint64_t>(w.logical_experts()), tp = static_cast<uint64_t>(w.tp().tp());
      op(g, s, Activity::DataShuffle, k_->memory(g, "flex_expand_routing_map", t * logical * mp::kMaskBytes * (1 + tp)));
      op(g, s, Activity::DataShuffle, k_->memory(g, "flex_expand_probs", t * logical * mp::kProbBytes * (1 + tp)));
    }
    // _DeepepManager.setup_metadata: torch.topk over the dense [T, E] probs.
    op(g, s, Activity::DataShuffle, k_->memory(g, "flex_topk_metadata", t * e * mp::kProbBytes + t * k * (mp::kLongBytes + mp::kProbBytes)));

    // fused_a2a.py (Megatron-LM 0014f13) fused_dispatch: x.contiguous() (L236), then
    // FusedDispatch.apply (L235): an autograd Function (host-only work, no kernel).
    c.host(g).framework_op();
    c.host(g).autograd_function();
    // get_dispatch_layout on the comm stream: per-rank and per-expert counts, is_token_in_rank;
    // its outputs come from the caching allocator (deep_ep.cpp:301-306, 2be0d4f8).
    stream_wait(g, comm, s, "layout after compute");
    c.host(g).framework_op();
    c.host(g).allocate(inter_ ? 4 : 3);
    c.launch(g, comm, Activity::DataShuffle, layout_kernel(g));
    stream_wait(g, s, comm, "compute after layout");

    // intranode_dispatch: notify_dispatch, then the host spins on the mapped counter.
    stream_wait(g, comm, s, "dispatch after compute");
    c.host(g).framework_op();
    // The rank and channel prefix matrices (intranode deep_ep.cpp:479-480; internode
    // :981-984 four); with async_finish=False (token_dispatcher.py:1182) no record_stream.
    c.host(g).allocate(inter_ ? 4 : 2);
    const uint64_t el_max = max_local_experts();
    NotifyConfig nc;
    nc.name = "deepep_notify_dispatch";
    nc.threads = p_.notify_threads;
    nc.barriers_before_counts = 1;
    for (int peer = 0; peer < c.gpus(); ++peer) {
      // This rank's token count for the peer and its counts for each of the peer's experts.
      nc.count_bytes_to_peer.push_back((1 + static_cast<uint64_t>(w.placement().local_experts(peer).size())) * kIntBytes);
    }
    if (inter_) internode_notify(g, nc);
    nc.barriers_after_counts = 1;
    nc.local_bytes = n * (n + el_max) * kIntBytes;  // read every rank's counts, prefix sums
    nc.clean_bytes = static_cast<uint64_t>(plan_.channels) * n * 4 * kIntBytes;  // head, tail, start, end per queue
    nc.final_barriers = 1;
    nc.extra_blocks = static_cast<uint32_t>(n);  // channel_prefix_matrix, one CTA per destination rank
    nc.extra_block_bytes = t * n + static_cast<uint64_t>(plan_.channels) * kIntBytes;
    c.launch(g, comm, Activity::Communication,
             deepep_notify_kernel(c, g, nc, notify_barrier_, [this, g] {
               c_->sim().schedule_in(p_.mapped_write_latency, [this, g] { counter_visible(g); });
             }));
    c.host(g).call([this, g] { host_reaches_spin(g); });
  }

  // Across nodes DeepEP's NVSHMEM world holds only the GPUs of one local index (normal mode), so
  // notify_dispatch syncs with the same-rail GPUs (nvshmem_sync_all) and its node's GPUs
  // (barrier_block), RDMA-puts the counts for a node to its same-rail GPU, then writes each node
  // peer its counts over NVLink (2be0d4f8 csrc/kernels/internode.cu:130-217).
  std::vector<int> internode_barrier_peers(int g) const {
    const int per = c_->network().config().gpus_per_node;
    std::vector<int> peers;
    for (int p = 0; p < c_->gpus(); ++p) {
      if (p != g && (p / per == g / per || p % per == g % per)) peers.push_back(p);
    }
    return peers;
  }
  void internode_notify(int g, NotifyConfig& nc) const {
    const int per = c_->network().config().gpus_per_node;
    const uint64_t nodes = static_cast<uint64_t>(c_->gpus() / per);
    const uint64_t node_experts = static_cast<uint64_t>(c_->workload().model().experts()) / nodes;
    nc.barrier_peers = internode_barrier_peers(g);
    for (int p = 0; p < c_->gpus(); ++p) {
      uint64_t bytes = 0;
      if (p / per == g / per) {
        bytes = (nodes + node_experts / static_cast<uint64_t>(per)) * kIntBytes;  // per RDMA rank, per NVL expert
      } else if (p % per == g % per) {
        bytes = (static_cast<uint64_t>(per) + node_experts + 1) * kIntBytes;  // per NVL rank, node expert, RDMA rank
      }
      nc.count_bytes_to_peer.at(p) = bytes;
    }
  }

  uint64_t max_local_experts() const {
    uint64_t m = 0;
    for (int g = 0; g < c_->gpus(); ++g) m = std::max<uint64_t>(m, c_->workload().placement().local_experts(g).size());
    return m;
  }

  gpu::KernelSpec layout_kernel(int g) {
    const Workload& w = c_->workload();
    const uint64_t t = static_cast<uint64_t>(w.tokens().count(g));
    const uint64_t k = static_cast<uint64_t>(w.model().top_k());
    const uint32_t e = static_cast<uint32_t>(w.model().experts());
    const uint32_t n = static_cast<uint32_t>(c_->gpus());
    const uint32_t expert_blocks = (e + p_.layout_experts_per_block - 1) / p_.layout_experts_per_block;
    const uint32_t rank_blocks = (n + p_.layout_ranks_per_block - 1) / p_.layout_ranks_per_block;
    gpu::KernelSpec spec;
    spec.name = "deepep_get_dispatch_layout";
    spec.blocks = expert_blocks + rank_blocks;
    spec.shape.threads = p_.layout_threads;
    // Every CTA scans all top-k indices; rank CTAs also write their columns of is_token_in_rank.
    const uint64_t scan = t * k * mp::kLongBytes;
    const uint64_t ranks_per = p_.layout_ranks_per_block;
    spec.program = std::make_shared<gpu::FunctionProgram>([expert_blocks, scan, t, ranks_per](gpu::BlockState& b) {
      if (b.step > 0) return gpu::Step::done();
      return gpu::Step::memory(b.block < expert_blocks ? scan : scan + t * ranks_per);
    });
    return spec;
  }

  // ---- the host spin on the mapped counter ----
  void host_reaches_spin(int g) {
    GpuState& x = gpus_[g];
    x.host_reached = c_->sim().now();
    if (x.counter_visible) {
      issue_after_spin(g);  // the first read already sees the count
    } else {
      x.host_waiting = true;
    }
  }
  void counter_visible(int g) {
    GpuState& x = gpus_[g];
    x.counter_visible = true;
    if (!x.host_waiting) return;
    c_->sim().schedule_in(p_.host_poll_reaction, [this, g] {
      c_->log(g, Activity::Synchronisation, gpus_[g].host_reached, c_->sim().now());
      issue_after_spin(g);
    });
  }

  void issue_after_spin(int g) {
    Cluster& c = *c_;
    const Workload& w = c.workload();
    const uint64_t row = static_cast<uint64_t>(w.model().row_bytes());
    const uint64_t k = static_cast<uint64_t>(w.model().top_k());
    gpu::Stream& s = c.stream(g);
    gpu::Stream& comm = *gpus_[g].comm;
    const DeepEpExpertRows& ex = experts_[g];
    const uint64_t ru = plan_.recv_token[g].size();  // tokens received
    const uint64_t rows = ex.from.size();                                 // (token, local expert) rows
    const uint64_t el = ex.per_expert.size();

    // The received tensors, sized by the count the host read (intranode deep_ep.cpp:541-554:
    // recv_x, src_idx, channel prefix, send_head, top-k indices and weights; internode
    // :1048-1070 eight), then the dispatch kernel.
    c.host(g).allocate(inter_ ? 8 : 6);
    auto id = std::make_shared<gpu::KernelId>();
    gpu::KernelSpec disp = inter_ ? inter_->dispatch(g) : dispatch_->kernel.kernel(g);
    disp.on_done = [this, g, id] {
      c_->phases(g).dispatch_start = *c_->gpu(g).kernel_times(*id).started;
      c_->phases(g).dispatch_end = c_->sim().now();
    };
    *id = c.launch(g, comm, Activity::Communication, std::move(disp));
    stream_wait(g, s, comm, "compute after dispatch");

    c.host(g).framework_op();  // fused_a2a.py:136 torch.tensor(num_recv_tokens_per_expert_list), on the CPU
    // get_permuted_hidden_states_by_experts (Megatron-LM 0014f13 token_dispatcher.py:1012-1032):
    // indices -> multihot, then the unfused permute with its two masked_selects.
    mp::issue_indices_to_multihot(c, *k_, g, s, ru, k, el, rows);
    // token_dispatcher.py:1031 num_out_tokens=sum(self.tokens_per_expert): Python's sum over
    // that CPU tensor, one unbind (Tensor.__iter__) and E_l CPU adds (0 + t0, then + t_i).
    for (uint64_t i = 0; i < 1 + el; ++i) c.host(g).framework_op();
    mp::issue_permute(c, *k_, g, s, ru, el, rows, [this, g] { fn_->permute(g); });
    if (!ex.per_expert.empty()) {
      gpu::KernelSpec g1 = k_->gemm1_model(ex.per_expert).kernel("gemm1");
      g1.on_done = [this, g] {
        c_->phases(g).gemm1_end = c_->sim().now();
        fn_->gemm1(g);
      };
      op(g, s, Activity::ExpertCompute, std::move(g1));
      gpu::KernelSpec act = k_->activation(g, rows);
      act.on_done = [this, g] { fn_->activation(g); };
      op(g, s, Activity::ExpertCompute, std::move(act));
      gpu::KernelSpec g2 = k_->gemm2_model(ex.per_expert).kernel("gemm2");
      g2.on_done = [this, g] { fn_->gemm2(g); };
      op(g, s, Activity::ExpertCompute, std::move(g2));
    }
    // unpermute to DeepEP order: zeros, then scatter_add of each token's local expert rows.
    op(g, s, Activity::DataShuffle, k_->memory(g, "unpermute_zeros", ru * row));
    gpu::KernelSpec sum = k_->memory(g, "unpermute_scatter_add", rows * (row + mp::kLongBytes) + ru * row);
    sum.on_done = [this, g] { fn_->unpermute(g); };
    op(g, s, Activity::Scaling, std::move(sum));
    issue_combine(g);
  }

  // FusedCombine.apply (fused_a2a.py:257), then intranode_combine: cached_notify_combine, the
  // output from the caching allocator (deep_ep.cpp:744; internode :1306), the combine kernel.
  void issue_combine(int g) {
    Cluster& c = *c_;
    gpu::Stream& s = c.stream(g);
    gpu::Stream& comm = *gpus_[g].comm;
    c.host(g).autograd_function();
    stream_wait(g, comm, s, "combine after compute");
    c.host(g).framework_op();
    const uint64_t n = static_cast<uint64_t>(c.gpus());
    NotifyConfig nc;
    nc.name = "deepep_cached_notify_combine";
    nc.threads = p_.notify_threads;
    nc.barriers_before_counts = 1;
    nc.barriers_after_counts = 0;
    nc.clean_bytes = static_cast<uint64_t>(plan_.channels) * n * 4 * kIntBytes;
    nc.final_barriers = 1;
    nc.extra_blocks = static_cast<uint32_t>(plan_.channels);  // head fix-up per channel
    nc.extra_block_bytes = n * 2 * kIntBytes;
    if (inter_) nc.barrier_peers = internode_barrier_peers(g);
    c.launch(g, comm, Activity::Communication, deepep_notify_kernel(c, g, nc, combine_barrier_, nullptr));
    c.host(g).allocate(1);
    auto cid = std::make_shared<gpu::KernelId>();
    gpu::KernelSpec comb = inter_ ? inter_->combine(g) : combine_->kernel.kernel(g);
    comb.on_done = [this, g, cid] {
      c_->phases(g).combine_start = *c_->gpu(g).kernel_times(*cid).started;
      c_->phases(g).combine_end = c_->sim().now();
      fn_->output(g);
      c_->layer_done(g);
    };
    *cid = c.launch(g, comm, Activity::Communication, std::move(comb));
  }

  DeepEpParams p_;
  Cluster* c_ = nullptr;
  std::unique_ptr<SharedKernels> k_;
  DeepEpPlan plan_;
  PerGpu<DeepEpExpertRows> experts_;
  std::unique_ptr<DeepEpFunctional> fn_;  // does nothing in timing-only runs
  PerGpu<GpuState> gpus_;
  PerGpu<gpu::SignalId> notify_barrier_, combine_barrier_;
  std::unique_ptr<Transfer> dispatch_, combine_;  // one node
  DeepEpInternodePlan inter_plan_;                 // several nodes
  std::unique_ptr<DeepEpInternode> inter_;
  DeepEpLlPlan ll_plan_;                           // low-latency mode
  std::unique_ptr<DeepEpLowLatency> ll_;
  std::unique_ptr<DeepEpLlFunctional> ll_fn_;
  uint64_t ll_msg_bytes_ = 0;
};

}  // namespace

SystemEntry deepep_system_entry() {
  SystemEntry e{"deepep",
                "DeepEP normal-mode intranode dispatch/combine (SM-issued NVLink stores on a fixed SM budget) "
                "under Megatron's flex dispatcher",
                declare_deepep_params,
                [](const Config& c) -> std::unique_ptr<MoeSystem> {
                  return std::make_unique<DeepEpSystem>(DeepEpParams::from(c));
                },
                112,
                true};
  e.flow_messages_bound = deepep_flow_messages_bound;
  e.refusal = deepep_refusal;
  e.state_bytes = deepep_state_bytes;
  return e;
}

}  // namespace moehub
