// `tutel` (docs/research/systems.md 3; microsoft/tutel v0.3.0 tutel/impls/moe_layer.py
// MOELayer.forward, fast_dispatch.py, overlap.py, communicate.py): capacity-based static buffers
// and equal-split all-to-alls. Per GPU: the gate and extract_critical as their torch ops
// (tutel_gate.h); the capacity from host arithmetic (no sync when capacity_factor > 0); encode
// in the dispatcher's fp32 (cast up, zero the [E, capacity, H] buffer, one scatter kernel per
// slot, cast down; rows past capacity dropped); the exchange: at overlap degree 1 (the
// harness's) two PyTorch all_to_all_singles around the experts, at d > 1 the capacity
// dimension split into d chunks, Tutel's NCCL stream sending chunk i to every GPU (padding
// included) while the compute stream runs, per chunk, pre-expert permute, the FFN (GEMM1, bias
// add, activation, GEMM2, bias add), post-expert permute, each chunk's combine all-to-all
// following on the NCCL stream; decode in fp32 (cast up, one weighted gather per slot, their
// sum, cast down).

#include <array>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "gpu/gemm.h"
#include "gpu/gpu.h"
#include "gpu/memory_kernel.h"
#include "sim/error.h"
#include "platform/moe_system.h"
#include "platform/nccl_group_call.h"
#include "platform/resource_estimate.h"
#include "platform/shared_kernels.h"
#include "systems/tutel/tutel_2dh.h"
#include "systems/tutel/tutel_capacity.h"
#include "systems/tutel/tutel_functional.h"
#include "systems/tutel/tutel_gate.h"
#include "systems/tutel/tutel_shards.h"
#include "systems/tutel/tutel_system.h"

namespace moehub {

namespace {

constexpr uint64_t kTutelIndexBytes = 4;  // int32 indices and locations (fast_dispatch.py)

uint64_t to_u64(int64_t v) { return static_cast<uint64_t>(v); }

class TutelSystem final : public MoeSystem {
 public:
  explicit TutelSystem(TutelConfig cfg) : cfg_(cfg) {}

  // The harness's plain experts (docs/systems/tutel.md): the layer as Tutel computes it, so
  // that the timing, the functional rows and their reference all use fc1, activation, fc2.
  std::optional<Workload> own_workload(const Workload& w) override {
    if (cfg_.expert_ffn != "plain" || !w.model().gated) return std::nullopt;
    return w.with_gated_experts(false);
  }

  void start(Cluster& c) override {
    cluster_ = &c;
    const Workload& w = c.workload();
    const ModelShape& m = w.model();
    n_ = c.gpus();
    r_ = w.tp().tp();  // sharded_count: > 1 only on parallel_type 'model''s path (tutel_tp_refusal)
    if (r_ > 1 && cfg_.parallel_type != "model") throw std::logic_error("tutel: parallel.tp > 1 needs parallel_type 'model'");
    tokens_per_gpu_ = w.tokens().max_count();
    const int64_t max_rows = max_rows_per_source_expert(w);
    int64_t max_local = 0;
    for (int g = 0; g < n_; ++g) max_local = std::max<int64_t>(max_local, static_cast<int64_t>(w.placement().local_experts(g).size()));
    degree_ = cfg_.overlap_degree > 0 ? cfg_.overlap_degree
                                      : tutel_adaptive_degree(c.gpu_config(), m, n_, max_local, cfg_.capacity_factor,
                                                              tokens_per_gpu_, max_rows,
                                                              c.network().config().gpu_bandwidth);
    // Alignment sharded_count x overlap degree (moe_layer.py:268), over the gate's experts.
    capacity_ = tutel_capacity(cfg_.capacity_factor, tokens_per_gpu_, gate_model().experts(), gate_model().top_k(),
                               max_rows, r_ * degree_);
    if (capacity_ < 1) throw UserError("systems.tutel.capacity_factor", "gives a capacity of 0 rows per expert");
    slots_ = std::make_unique<TutelSlots>(r_ > 1 ? w.logical_routing() : w.routing(), w.tokens(), capacity_);
    chunk_ = capacity_ / degree_;
    if (r_ > 1) shards_ = std::make_unique<TutelShards>(c, r_, degree_, cfg_.nccl);

    // Equal splits: every GPU sends each GPU that GPU's experts' chunk, padding included.
    std::vector<int64_t> locals;
    for (int g = 0; g < n_; ++g) locals.push_back(local(g));
    const PerPair<uint64_t> bytes = tutel_a2a_bytes(locals, chunk_, to_u64(m.row_bytes()));
    if (cfg_.a2a_algo == "2dh") {
      start_2dh(c);
    } else {
      start_linear(c, bytes);
    }
    if (cfg_.capacity_factor <= 0) {
      // simple_all_reduce(MAX) of one int32, modelled as each GPU sending it to every GPU.
      capacity_reduce_ = std::make_unique<NcclGroupCall>(c, "tutel_capacity_allreduce", PerPair<uint64_t>(n_, kTutelIndexBytes), cfg_.nccl);
    }
    for (int g = 0; g < n_; ++g) issue(g);
  }

  void start_linear(Cluster& c, const PerPair<uint64_t>& bytes) {
    for (int i = 0; i < degree_; ++i) {
      scatter_.push_back(std::make_unique<NcclGroupCall>(c, fmt::format("tutel_a2a_scatter_{}", i), bytes, cfg_.nccl));
      gather_.push_back(std::make_unique<NcclGroupCall>(c, fmt::format("tutel_a2a_gather_{}", i), bytes.transposed(), cfg_.nccl));
    }
    fn_ = TutelFunctional::make(c, *slots_, chunk_, r_);
    for (int i = 0; i < degree_; ++i) {
      scatter_[to_u64(i)]->set_hooks([this, i](int s, int d) { fn_->scatter(s, d, i, false); },
                                [this, i](int s, int d) { fn_->scatter(s, d, i, true); });
      gather_[to_u64(i)]->set_hooks([this, i](int s, int d) { fn_->gather(s, d, i, false); },
                               [this, i](int s, int d) { fn_->gather(s, d, i, true); });
    }
    first_scatter_ = scatter_.front().get();
    first_gather_ = gather_.front().get();
  }

  // use_2dh (tutel_2dh.h): per chunk a first and a second leg per direction, each call on its
  // own NCCL communicator in Tutel (dist.new_group, or the extension's one comm); here on the
  // world's, the pairs outside the group at zero bytes. Degree 1 (PrimAllToAll2D) goes between
  // nodes first, the extension (d > 1) inside the node first; on one node only the
  // intra-node call runs, as a flat one. Functional rows: read from the source when its first
  // leg starts, written into the destination when the relay's second leg is delivered (the
  // relay's buffer is not modelled; that the first leg arrived is checked).
  void start_2dh(Cluster& c) {
    const NetConfig& net = c.network().config();
    per_node_ = net.scale_out() ? net.gpus_per_node : n_;
    std::vector<int64_t> locals;
    for (int g = 0; g < n_; ++g) locals.push_back(local(g));
    const uint64_t slots = to_u64(chunk_) * c.model().row_bytes();
    const Tutel2dhSteps st = degree_ == 1 ? tutel_2dh_steps(locals, per_node_, slots)
                                          : tutel_2dh_extension_steps(locals, per_node_, slots);
    fn_ = TutelFunctional::make(c, *slots_, chunk_, r_);
    const bool one_node = per_node_ == n_, inter_first = degree_ == 1;
    arrived_.assign(to_u64(degree_), PerPair<char>(n_, 0));
    for (int i = 0; i < degree_; ++i) {
      const auto name = [i](const char* leg) { return fmt::format("tutel_a2a_2dh_{}_{}", leg, i); };
      scatter_.push_back(std::make_unique<NcclGroupCall>(c, name("intra_scatter"), st.dispatch_intra, cfg_.nccl));
      gather_.push_back(std::make_unique<NcclGroupCall>(c, name("intra_gather"), st.combine_intra, cfg_.nccl));
      if (one_node) {
        scatter_[to_u64(i)]->set_hooks([this, i](int s, int d) { fn_->scatter(s, d, i, false); },
                                  [this, i](int s, int d) { fn_->scatter(s, d, i, true); });
        gather_[to_u64(i)]->set_hooks([this, i](int s, int d) { fn_->gather(s, d, i, false); },
                                 [this, i](int s, int d) { fn_->gather(s, d, i, true); });
        continue;
      }
      inter_scatter_.push_back(std::make_unique<NcclGroupCall>(c, name("inter_scatter"), st.dispatch_inter, cfg_.nccl));
      inter_gather_.push_back(std::make_unique<NcclGroupCall>(c, name("inter_gather"), st.combine_inter, cfg_.nccl));
      NcclGroupCall& first_s = inter_first ? *inter_scatter_.back() : *scatter_.back();
      NcclGroupCall& second_s = inter_first ? *scatter_.back() : *inter_scatter_.back();
      NcclGroupCall& first_g = inter_first ? *inter_gather_.back() : *gather_.back();
      NcclGroupCall& second_g = inter_first ? *gather_.back() : *inter_gather_.back();
      first_s.set_hooks([this, i](int s, int r) { first_leg(s, r, i, true); }, [this, i](int s, int r) { arrived_[to_u64(i)](s, r) |= 1; });
      first_g.set_hooks([this, i](int s, int r) { first_leg(s, r, i, false); }, [this, i](int s, int r) { arrived_[to_u64(i)](s, r) |= 2; });
      second_s.set_hooks(nullptr, [this, i](int r, int d) { second_leg(r, d, i, true); });
      second_g.set_hooks(nullptr, [this, i](int r, int d) { second_leg(r, d, i, false); });
    }
    first_scatter_ = one_node || !inter_first ? scatter_[0].get() : inter_scatter_[0].get();
    first_gather_ = one_node || !inter_first ? gather_[0].get() : inter_gather_[0].get();
  }

  // The GPUs on r's node (same_node) or of r's local rank on every node.
  std::vector<int> peers(int r, bool same_node) const {
    std::vector<int> out;
    for (int g = 0; g < n_; ++g) {
      if (same_node ? g / per_node_ == r / per_node_ : g % per_node_ == r % per_node_) out.push_back(g);
    }
    return out;
  }

  // The first leg s -> r of chunk i starts: s's rows for every GPU it reaches via r are read
  // (degree 1: r's node; the extension: r's local rank).
  void first_leg(int s, int r, int i, bool dispatch) {
    for (int d : peers(r, degree_ == 1)) {
      if (dispatch) {
        fn_->scatter(s, d, i, false);
      } else {
        fn_->gather(s, d, i, false);
      }
    }
  }

  // The second leg r -> d is delivered: every row that reached r for d lands in d.
  void second_leg(int r, int d, int i, bool dispatch) {
    for (int s : peers(r, degree_ > 1)) {
      if ((arrived_[to_u64(i)](s, r) & (dispatch ? 1 : 2)) == 0) {
        throw std::logic_error(fmt::format("tutel 2dh: rows of GPU {} left relay {} before they arrived", s, r));
      }
      if (dispatch) {
        fn_->scatter(s, d, i, true);
      } else {
        fn_->gather(s, d, i, true);
      }
    }
  }

  nlohmann::json stats(Cluster& c) override {
    int64_t padded = 0, slots = 0;
    for (int d = 0; d < n_; ++d) {
      for (int64_t e : c.workload().placement().local_experts(d)) {
        for (int s = 0; s < n_; ++s) {
          slots += capacity_;
          padded += capacity_ - slots_->kept(s, e / r_);  // a shard's rows are its expert's
        }
      }
    }
    nlohmann::json out = {{"capacity", capacity_},
            {"capacity_factor", cfg_.capacity_factor},
            {"overlap_degree", degree_},
            {"expert_ffn", c.model().gated ? "gated" : "plain"},
            {"dropped_rows", slots_->dropped_rows()},
            {"dropped_tokens", slots_->dropped_tokens()},
            {"expert_slots", slots},
            {"padding_rows", padded},
            {"host_syncs_per_gpu", cfg_.capacity_factor > 0 ? 0 : 1}};
    if (cfg_.a2a_algo != "linear") out["a2a_algo"] = cfg_.a2a_algo;  // linear runs print as before
    if (r_ > 1) out["sharded_count"] = r_;
    return out;
  }

 private:
  int local(int g) const { return static_cast<int>(cluster_->workload().placement().local_experts(g).size()); }
  // The experts Tutel's gate routes: the logical ones under 'model' (each on its r shard GPUs),
  // else the workload's (replicas included).
  const ModelShape& gate_model() const { return r_ > 1 ? cluster_->workload().logical_model() : cluster_->model(); }

  // GPU g's host program, in Tutel's issue order. Tutel runs from Python: every op pays the
  // framework op cost (c.op).
  void issue(int g) {
    Cluster& c = *cluster_;
    SharedKernels k(c);
    const ModelShape& m = gate_model();
    gpu::Stream& s = c.stream(g);
    gpu::Host& host = c.host(g);
    const int64_t tokens = c.workload().tokens().count(g);
    const uint64_t t = to_u64(tokens);

    launch_tutel_routing(c, k, g, s, tokens, m);
    if (capacity_reduce_) {
      // capacity_factor <= 0 (fast_dispatch.py:189-190): locations2.max(), simple_all_reduce's
      // clone and all_reduce(MAX) (communicate.py:141-142), then int(...) on the host.
      c.op(g, s, Activity::DataShuffle, k.memory(g, "tutel_capacity_max", to_u64(m.experts()) * kTutelIndexBytes + kTutelIndexBytes));
      c.op(g, s, Activity::DataShuffle, k.memory(g, "tutel_capacity_clone", 2 * kTutelIndexBytes));
      host.framework_op();  // dist.all_reduce
      host.nccl_call();
      capacity_reduce_->launch(g, s);
      host.framework_op();  // int(...) on the host
      c.host_sync(g, s, kTutelIndexBytes, Time::zero(), nullptr);
    }
    issue_encode(g, k, t);
    const uint64_t buffer_bytes = codec_sizes()[3] * to_u64(m.dtype_bytes);  // [E, capacity, H] in bf16
    if (shards_) shards_->repeat(g, k, buffer_bytes, *fn_);

    if (degree_ > 1 && cfg_.a2a_algo == "2dh") {
      issue_overlapped_2dh(g, k);
    } else if (degree_ > 1) {
      issue_overlapped(g, k);
    } else if (cfg_.a2a_algo == "2dh") {
      issue_unpipelined_2dh(g, k);
    } else {
      issue_unpipelined(g, k);
    }
    if (shards_) shards_->sum(g, k, buffer_bytes, *fn_);
    issue_decode(g, k, t);
  }

  // a2a_ffn_overlap_forward (overlap.py:29-65, non-2dh, d > 1) through the extension
  // (custom/custom_kernel.cpp:414-568): CurrentStreamRelease records event 0 on the compute
  // stream; AllToAllScatterAsync makes Tutel's NCCL stream wait for it and issues one NCCL group
  // per chunk, recording chunk i's event after it; per chunk the compute stream acquires the
  // event, runs the experts between the two permutes and releases the event again; only after
  // every chunk is issued, AllToAllGatherAsync issues each chunk's gather behind its event and
  // records event 0, which the final CurrentStreamAcquire waits for. Each `.apply` is one
  // framework op; the events and NCCL groups are the extension's raw calls.
  void issue_overlapped(int g, const SharedKernels& k) {
    Cluster& c = *cluster_;
    gpu::Gpu& gpu = c.gpu(g);
    gpu::Stream& s = c.stream(g);
    gpu::Stream& ns = gpu.create_stream("tutel_nccl");
    gpu::Host& host = c.host(g);
    const gpu::EventId encoded = gpu.create_event("tutel_encoded");
    stream_release(g, s, encoded);
    host.framework_op();  // AllToAllScatterAsync.apply
    host.wait(ns, encoded);
    std::vector<gpu::EventId> arrived, computed;
    for (int i = 0; i < degree_; ++i) {
      arrived.push_back(gpu.create_event(fmt::format("tutel_scatter_{}", i)));
      computed.push_back(gpu.create_event(fmt::format("tutel_experts_{}", i)));
      host.nccl_call();
      scatter_[to_u64(i)]->launch(g, ns, [this, g, i] { mark_dispatch(g, i); });
      host.record(ns, arrived.back());
    }
    for (int i = 0; i < degree_; ++i) issue_chunk_experts(g, k, i, arrived[to_u64(i)], computed[to_u64(i)]);
    const gpu::EventId combined = gpu.create_event("tutel_combined");
    host.framework_op();  // AllToAllGatherAsync.apply
    for (int i = 0; i < degree_; ++i) {
      host.wait(ns, computed[to_u64(i)]);
      host.nccl_call();
      gather_[to_u64(i)]->launch(g, ns, [this, g, i] { mark_combine(g, i); });
    }
    host.record(ns, combined);
    host.framework_op();  // CurrentStreamAcquire.apply
    host.wait(s, combined);
  }

  // One chunk's experts on the compute stream once `arrived` is recorded, between the
  // pre- and post-expert permute copies; records `computed` (CurrentStreamRelease).
  void issue_chunk_experts(int g, const SharedKernels& k, int i, gpu::EventId arrived, gpu::EventId computed) {
    gpu::Host& host = cluster_->host(g);
    gpu::Stream& s = cluster_->stream(g);
    host.framework_op();  // CurrentStreamAcquire.apply
    host.wait(s, arrived);
    permute_copy(g, k, i, true);
    host.framework_op();  // pre_expert_permute's final view
    issue_experts(g, k, i);
    permute_copy(g, k, i, false);
    host.framework_op();  // post_expert_permute's final view
    stream_release(g, s, computed);
  }

  // a2a_ffn_overlap_forward with use_2dh (overlap.py:15-27, 36-47, 49-62): `input.split` along
  // the capacity; per chunk CurrentStreamRelease (apply, `contiguous`: a copy, the chunk being a
  // strided slice; record i on the compute stream), NcclStreamAcquire (Tutel's NCCL stream
  // waits), AllToAll2DAsync, NcclStreamRelease (record on the NCCL stream); the experts per
  // chunk as without 2dh; then per chunk NcclStreamAcquire, AllToAll2DAsync, NcclStreamRelease,
  // CurrentStreamAcquire; finally `torch.cat` of the chunks (a copy). Each `.apply` one op.
  void issue_overlapped_2dh(int g, const SharedKernels& k) {
    Cluster& c = *cluster_;
    gpu::Gpu& gpu = c.gpu(g);
    gpu::Stream& s = c.stream(g);
    gpu::Stream& ns = gpu.create_stream("tutel_nccl");
    gpu::Host& host = c.host(g);
    const uint64_t rows = to_u64(local(g)) * to_u64(n_) * to_u64(chunk_);  // one chunk of [E, capacity, H]
    std::vector<gpu::EventId> sent, computed, combined;
    host.framework_op();  // input.split
    for (int i = 0; i < degree_; ++i) {
      const gpu::EventId ready = gpu.create_event(fmt::format("tutel_chunk_{}", i));
      sent.push_back(gpu.create_event(fmt::format("tutel_scatter_{}", i)));
      host.framework_op();  // CurrentStreamRelease.apply
      c.op(g, s, Activity::DataShuffle, k.permute(g, rows, "tutel_2dh_chunk_contiguous"));
      host.record(s, ready);
      host.framework_op();  // NcclStreamAcquire.apply
      host.wait(ns, ready);
      all_to_all_2d(g, k, ns, i, true);
      host.framework_op();  // NcclStreamRelease.apply
      host.record(ns, sent.back());
    }
    for (int i = 0; i < degree_; ++i) {
      computed.push_back(gpu.create_event(fmt::format("tutel_experts_{}", i)));
      issue_chunk_experts(g, k, i, sent[to_u64(i)], computed.back());
    }
    for (int i = 0; i < degree_; ++i) {
      combined.push_back(gpu.create_event(fmt::format("tutel_gathered_{}", i)));
      host.framework_op();  // NcclStreamAcquire.apply
      host.wait(ns, computed[to_u64(i)]);
      all_to_all_2d(g, k, ns, i, false);
      host.framework_op();  // NcclStreamRelease.apply
      host.record(ns, combined.back());
      host.framework_op();  // CurrentStreamAcquire.apply
      host.wait(s, combined.back());
    }
    c.op(g, s, Activity::DataShuffle, k.permute(g, rows * to_u64(degree_), "tutel_2dh_cat"));
  }

  // AllToAll2DAsync.apply and nccl_all_to_all_2d_async (custom/custom_kernel.cpp:570-640) on
  // the NCCL stream: with more than one node a stride copy, the group inside the node, a
  // stride copy, the group between nodes (raw launches from C++: no framework ops; the JIT
  // memStrideCopyKernel timed as a permute copy of the chunk); on one node one flat group.
  void all_to_all_2d(int g, const SharedKernels& k, gpu::Stream& ns, int i, bool dispatch) {
    Cluster& c = *cluster_;
    c.host(g).framework_op();  // AllToAll2DAsync.apply
    const uint64_t rows = to_u64(local(g)) * to_u64(n_) * to_u64(chunk_);
    const bool nodes = per_node_ != n_;
    NcclGroupCall& intra = dispatch ? *scatter_[to_u64(i)] : *gather_[to_u64(i)];
    Callback done = [this, g, i, dispatch] { dispatch ? mark_dispatch(g, i) : mark_combine(g, i); };
    if (nodes) c.launch(g, ns, Activity::DataShuffle, k.permute(g, rows, "tutel_2dh_stride_copy"));
    c.host(g).nccl_call();
    intra.launch(g, ns, nodes ? Callback() : std::move(done));
    if (!nodes) return;
    c.launch(g, ns, Activity::DataShuffle, k.permute(g, rows, "tutel_2dh_stride_copy"));
    c.host(g).nccl_call();
    (dispatch ? *inter_scatter_[to_u64(i)] : *inter_gather_[to_u64(i)]).launch(g, ns, std::move(done));
  }

  // CurrentStreamRelease.apply (communicate.py:220-228): the apply, `input.contiguous()` of a
  // contiguous tensor (no kernel) and the extension's event record on the compute stream.
  void stream_release(int g, gpu::Stream& s, gpu::EventId event) {
    gpu::Host& host = cluster_->host(g);
    host.framework_op();
    host.framework_op();
    host.record(s, event);
  }

  // Degree 1, the authors' harness (moe_layer.py:302-305): `C.all_to_all(y, 1, 0)`, the experts,
  // `C.all_to_all(y, 0, 1)` through PyTorch's `dist.all_to_all_single` (communicate.py:379-431,
  // 145-156). Each all_to_all_single runs on ProcessGroupNCCL's stream behind an event from the
  // compute stream and records an end event that `work.wait()` makes the compute stream wait for
  // (docs/research/megatron-router-te-ops.md row 22); the permute copies are the `contiguous`
  // calls inside the two all_to_alls.
  void issue_unpipelined(int g, const SharedKernels& k) {
    Cluster& c = *cluster_;
    gpu::Host& host = c.host(g);
    gpu::Stream& ns = c.gpu(g).create_stream("process_group_nccl");
    host.framework_op();  // simple_all_to_all's input.contiguous(): already contiguous
    all_to_all_single(g, ns, *scatter_[0], [this, g] { mark_dispatch(g, 0); });
    permute_copy(g, k, 0, true);  // local_input.view, permute, contiguous
    host.framework_op();          // view
    issue_experts(g, k, 0);
    permute_copy(g, k, 0, false);  // input.view, permute, then simple_all_to_all's contiguous
    all_to_all_single(g, ns, *gather_[0], [this, g] { mark_combine(g, 0); });
    host.framework_op();  // local_input.view
  }

  // Degree 1 with use_2dh: `C.all_to_all(y, 1, 0, use_2dh=True)` = PrimAllToAll2D.apply
  // (communicate.py:348-360): all_to_all over the data group, then over the model group, each
  // the degree-1 sequence above (contiguous, all_to_all_single, permute copy, view; between
  // nodes skipped on one node: transform returns its input for a group of one, :423-425), then
  // view, swapaxes, `contiguous` (a copy of the whole buffer; none on one node, where the
  // swapped axis has size 1) and view. The combine `C.all_to_all(y, 0, 1, use_2dh=True)`: per
  // group the permute copy before all_to_all_single and the view after, then the same swap.
  void issue_unpipelined_2dh(int g, const SharedKernels& k) {
    Cluster& c = *cluster_;
    gpu::Host& host = c.host(g);
    gpu::Stream& ns = c.gpu(g).create_stream("process_group_nccl");
    const bool nodes = per_node_ != n_;
    host.framework_op();  // PrimAllToAll2D.apply
    if (nodes) {
      host.framework_op();  // contiguous
      all_to_all_single(g, ns, *inter_scatter_[0], [this, g] { mark_dispatch(g, -1); });
      relayout_copy(g, k, "tutel_2dh_inter_permute", nullptr);
      host.framework_op();  // view
    }
    host.framework_op();  // contiguous
    all_to_all_single(g, ns, *scatter_[0], [this, g] { mark_dispatch(g, 0); });
    // The rows reach the expert layout with the last copy: the swap's, or this one on one node.
    const auto to_experts = [this, g] { fn_->pre_permute(g, 0); };
    relayout_copy(g, k, "tutel_2dh_intra_permute", nodes ? Callback() : Callback(to_experts));
    host.framework_op();  // view
    swap_copy(g, k, nodes ? Callback(to_experts) : Callback());
    issue_experts(g, k, 0);
    host.framework_op();  // PrimAllToAll2D.apply
    relayout_copy(g, k, "tutel_2dh_combine_permute", [this, g] { fn_->post_permute(g, 0); });
    if (nodes) {
      all_to_all_single(g, ns, *inter_gather_[0], [this, g] { mark_combine(g, -1); });
      host.framework_op();  // view
      relayout_copy(g, k, "tutel_2dh_combine_permute", nullptr);
    }
    all_to_all_single(g, ns, *gather_[0], [this, g] { mark_combine(g, 0); });
    host.framework_op();  // view
    swap_copy(g, k, nullptr);
  }

  // A view, permute and `contiguous` of the whole [E * capacity, H] buffer (the copy inside
  // each of PrimAllToAll2D's all_to_alls); `done` moves functional rows, if any.
  void relayout_copy(int g, const SharedKernels& k, const char* name, Callback done) {
    Cluster& c = *cluster_;
    c.host(g).framework_op();  // view
    c.host(g).framework_op();  // permute
    gpu::KernelSpec copy = k.permute(g, to_u64(local(g)) * to_u64(n_) * to_u64(chunk_), name);
    copy.on_done = std::move(done);
    c.op(g, c.stream(g), Activity::DataShuffle, std::move(copy));
  }

  // PrimAllToAll2D's view, swapaxes, contiguous, view: a copy only with more than one node.
  void swap_copy(int g, const SharedKernels& k, Callback done) {
    Cluster& c = *cluster_;
    c.host(g).framework_op();  // view
    c.host(g).framework_op();  // swapaxes
    if (per_node_ != n_) {
      gpu::KernelSpec copy = k.permute(g, to_u64(local(g)) * to_u64(n_) * to_u64(chunk_), "tutel_2dh_swapaxes");
      copy.on_done = std::move(done);
      c.op(g, c.stream(g), Activity::DataShuffle, std::move(copy));
    } else {
      c.host(g).framework_op();  // contiguous: already contiguous
    }
    c.host(g).framework_op();  // view
  }

  // simple_all_to_all(background=True) after its `input.contiguous()`, and its f_async
  // (communicate.py:145-156, 396-420): `torch.empty_like`, `dist.all_to_all_single` (events
  // around one NCCL group), then `work.wait()` and `RestoreBackward.apply`.
  void all_to_all_single(int g, gpu::Stream& ns, NcclGroupCall& call, Callback done) {
    Cluster& c = *cluster_;
    gpu::Host& host = c.host(g);
    gpu::Stream& s = c.stream(g);
    const gpu::EventId ready = c.gpu(g).create_event("tutel_a2a_ready");
    const gpu::EventId end = c.gpu(g).create_event("tutel_a2a_end");
    host.framework_op();  // empty_like
    host.framework_op();  // dist.all_to_all_single
    host.record(s, ready);
    host.wait(ns, ready);
    host.nccl_call();
    call.launch(g, ns, std::move(done));
    host.record(ns, end);
    host.framework_op();  // work.wait()
    host.wait(s, end);
    host.framework_op();  // RestoreBackward.apply
  }

  // A permute copy (pre_expert_permute / post_expert_permute, communicate.py:538-554, or the
  // same copy inside all_to_all at degree 1): view and permute (no kernels), then `contiguous`,
  // the copy of every local expert's rows of chunk i. A GPU without local experts copies nothing.
  void permute_copy(int g, const SharedKernels& k, int i, bool pre) {
    Cluster& c = *cluster_;
    c.host(g).framework_op();  // view
    c.host(g).framework_op();  // permute
    const uint64_t rows = to_u64(local(g)) * to_u64(n_) * to_u64(chunk_);
    if (rows == 0) {
      c.host(g).framework_op();  // contiguous of an empty tensor: no kernel
      return;
    }
    gpu::KernelSpec copy = k.permute(g, rows, pre ? "tutel_pre_expert_permute" : "tutel_post_expert_permute");
    if (pre) {
      copy.on_done = [this, g, i] { fn_->pre_permute(g, i); };
    } else {
      copy.on_done = [this, g, i] { fn_->post_permute(g, i); };
    }
    c.op(g, c.stream(g), Activity::DataShuffle, std::move(copy));
  }

  // expert_local (moe_layer.py:214-217) on chunk i: x.view, then FusedExpertsNetwork.forward
  // (experts/ffn.py:51-99: two bias unsqueezes, the weight permute, matmul + bias add,
  // activation, matmul + bias add), then y.reshape: 10 framework ops, 5 kernels.
  void issue_experts(int g, const SharedKernels& k, int i) {
    Cluster& c = *cluster_;
    const ModelShape& m = c.model();
    gpu::Host& host = c.host(g);
    gpu::Stream& s = c.stream(g);
    for (int v = 0; v < 3; ++v) host.framework_op();  // x.view, 2 unsqueezes
    if (shards_) shards_->fc2_bias(g, k, i, *fn_);    // ffn.py:87-91, 'model' only
    host.framework_op();                               // the weight permute
    const int el = local(g);
    const uint64_t rows = to_u64(n_) * to_u64(chunk_);  // per local expert: every source's chunk
    if (el == 0) {
      for (int v = 0; v < 6; ++v) host.framework_op();  // empty tensors: no kernels
      return;
    }
    const uint64_t all_rows = to_u64(el) * rows;
    const uint64_t eb = to_u64(m.dtype_bytes);
    const std::vector<uint64_t> per_expert(to_u64(el), rows);
    gpu::KernelSpec g1 = k.gemm1_model(per_expert).kernel("tutel_gemm1", fn_->gemm_hooks(g, i, true));
    if (i == degree_ - 1) g1.on_done = [&c, g] { c.phases(g).gemm1_end = c.sim().now(); };
    c.op(g, s, Activity::ExpertCompute, std::move(g1));
    // torch.add(y, bias): read and write the GEMM's output, read the [E_l, 1, N] bias.
    const auto bias_add = [&](const char* name, uint64_t cols) {
      return k.memory(g, name, 2 * all_rows * cols * eb + to_u64(el) * cols * eb);
    };
    c.op(g, s, Activity::ExpertCompute, bias_add("tutel_fc1_bias_add", to_u64(m.gemm1_cols())));
    c.op(g, s, Activity::ExpertCompute, k.activation(g, all_rows));
    c.op(g, s, Activity::ExpertCompute, k.gemm2_model(per_expert).kernel("tutel_gemm2", fn_->gemm_hooks(g, i, false)));
    gpu::KernelSpec fc2_bias = bias_add("tutel_fc2_bias_add", to_u64(m.hidden));
    if (shards_) fc2_bias.on_done = [this, g, i] { fn_->fc2_bias_add(g, i); };
    c.op(g, s, Activity::ExpertCompute, std::move(fc2_bias));
    host.framework_op();  // y.reshape: a view
  }

  // Hidden size, the model's bytes per element, the dispatcher's fp32 bytes per element and the
  // elements of the [E * capacity, H] dispatch buffer, for encode and decode.
  std::array<uint64_t, 4> codec_sizes() const {
    const ModelShape& m = gate_model();
    const uint64_t h = to_u64(m.hidden);
    return {h, to_u64(m.dtype_bytes), kTutelDispatchBytes, to_u64(m.experts()) * to_u64(capacity_) * h};
  }

  // Both directions open alike: a framework op with no kernel of its own (the `.to(logits_dtype)`
  // of a tensor already in the logits' dtype), the dispatcher's update, then the cast to fp32.
  void codec_prologue(int g, const SharedKernels& k, uint64_t t, const std::string& cast, uint64_t bytes) {
    Cluster& c = *cluster_;
    c.host(g).framework_op();
    launch_tutel_dispatcher_update(c, k, g, c.stream(g), static_cast<int64_t>(t), gate_model());
    c.op(g, c.stream(g), Activity::DataShuffle, k.memory(g, cast, bytes));
  }

  // moe_layer.py:281 fast_encode(x.to(logits_dtype), ...).to(x.dtype) (fast_dispatch.py:206-210,
  // 121-123, 18-29): the dispatcher works in fp32 for a bf16 model, so the tokens are cast up,
  // scattered into a zeroed fp32 [E * capacity, H] buffer (one kernel per slot) and the buffer
  // cast back down for the all-to-all.
  void issue_encode(int g, const SharedKernels& k, uint64_t t) {
    Cluster& c = *cluster_;
    const ModelShape& m = gate_model();
    gpu::Host& host = c.host(g);
    gpu::Stream& s = c.stream(g);
    const auto [h, eb, f, buffer] = codec_sizes();
    codec_prologue(g, k, t, "tutel_encode_to_fp32", t * h * (eb + f));  // x.to(logits_dtype): bf16 logits
    host.framework_op();  // GatingEncoder.apply
    gpu::KernelSpec zero = k.memory(g, "tutel_encode_zeros", buffer * f);
    zero.on_done = [this, g] { fn_->zero(g); };
    c.op(g, s, Activity::DataShuffle, std::move(zero));
    for (int64_t j = 0; j < m.top_k(); ++j) {
      gpu::KernelSpec sc = k.memory(g, "tutel_encode_scatter", 2 * t * h * f + t * 2 * kTutelIndexBytes);
      sc.on_done = [this, g, j] { fn_->encode(g, j); };
      c.op(g, s, Activity::DataShuffle, std::move(sc));
    }
    c.op(g, s, Activity::DataShuffle, k.memory(g, "tutel_encode_to_bf16", buffer * (f + eb)));
    host.framework_op();  // .view(E, -1, H)
    host.framework_op();  // .to(x.dtype): already bf16
  }

  // moe_layer.py:313-315 fast_decode(y.to(logits_dtype), ...) (fast_dispatch.py:212-216,
  // 127-129, 51-64): the combined buffer cast up to fp32, per slot an empty [T, H] output and
  // one weighted gather, the slots' outputs summed, the result cast back down.
  void issue_decode(int g, const SharedKernels& k, uint64_t t) {
    Cluster& c = *cluster_;
    const ModelShape& m = gate_model();
    gpu::Host& host = c.host(g);
    gpu::Stream& s = c.stream(g);
    const auto [h, eb, f, buffer] = codec_sizes();
    codec_prologue(g, k, t, "tutel_decode_to_fp32", buffer * (eb + f));  // y.to(logits_dtype): already bf16
    host.framework_op();  // GatingDecoder.apply
    for (int64_t j = 0; j < m.top_k(); ++j) {
      host.framework_op();  // torch.empty: no kernel
      c.op(g, s, Activity::DataShuffle, k.memory(g, "tutel_decode_gather", 2 * t * h * f + t * (2 * kTutelIndexBytes + f)));
      if (j > 0) c.op(g, s, Activity::Scaling, k.memory(g, "tutel_decode_add", 3 * t * h * f));
    }
    gpu::KernelSpec down = k.memory(g, "tutel_decode_to_bf16", t * h * (f + eb));
    down.on_done = [this, g] {
      fn_->decode(g);
      cluster_->layer_done(g);
    };
    c.op(g, s, Activity::DataShuffle, std::move(down));
    host.framework_op();  // .view(-1, H)
    host.framework_op();  // moe_layer.py:315 .view(original shape)
    host.framework_op();  // .to(original_dtype): already bf16
  }

  // i = -1: 2dh's inter-node call, which opens the phase and never ends it.
  void mark_dispatch(int g, int i) {
    PhaseMarks& p = cluster_->phases(g);
    if (i <= 0 && !p.dispatch_start) p.dispatch_start = first_scatter_->resident_at(g);
    if (i == degree_ - 1) p.dispatch_end = cluster_->sim().now();
  }
  void mark_combine(int g, int i) {
    PhaseMarks& p = cluster_->phases(g);
    if (i <= 0 && !p.combine_start) p.combine_start = first_gather_->resident_at(g);
    if (i == degree_ - 1) p.combine_end = cluster_->sim().now();
  }

  TutelConfig cfg_;
  Cluster* cluster_ = nullptr;
  int n_ = 0;
  int64_t r_ = 1;  // sharded_count
  int64_t tokens_per_gpu_ = 0;
  int degree_ = 1;
  int64_t capacity_ = 0;
  int64_t chunk_ = 0;
  std::unique_ptr<TutelSlots> slots_;
  std::vector<std::unique_ptr<NcclGroupCall>> scatter_, gather_;
  std::unique_ptr<NcclGroupCall> capacity_reduce_;
  // 2dh: per chunk the inter-node calls (none on one node; scatter_/gather_ hold the intra-node
  // ones), GPUs per node (LOCAL_SIZE), and which first legs have arrived (bit 1 dispatch, 2 combine).
  std::vector<std::unique_ptr<NcclGroupCall>> inter_scatter_, inter_gather_;
  int per_node_ = 0;
  std::vector<PerPair<char>> arrived_;
  NcclGroupCall* first_scatter_ = nullptr;  // the call whose residency opens the phase
  NcclGroupCall* first_gather_ = nullptr;
  std::unique_ptr<TutelFunctional> fn_;  // does nothing in timing-only runs
  std::unique_ptr<TutelShards> shards_;  // parallel_type 'model' only
};

// Its only traffic is NCCL calls: a scatter and a gather per pipelining chunk (the degree,
// at most 8 when adaptive: tutel_degree_estimates; 2dh: two legs each), under parallel_type
// 'model' a bias all-gather per chunk, and the capacity all-reduce; each call at most every
// pair. Without TP (nccl_messages_bound) the scatters together send every GPU's capacity slots
// of every physical expert (n x (E + R) x capacity rows, per leg), the gathers as much back; the
// capacity is at most tutel_capacity's with every local token on one expert (max rows = tokens
// per GPU) and the alignment of any adaptive degree (8).
long double tutel_pairs(const Config& c) {
  const TutelConfig t = TutelConfig::from(c);
  const WorkloadConfig w = WorkloadConfig::from(c);
  const long double calls = (w.tp > 1 ? 3 : 2) * (t.overlap_degree > 0 ? t.overlap_degree : 8) + 1;
  const auto n = static_cast<long double>(w.gpus);
  return calls * (t.a2a_algo == "2dh" ? 2 : 1) * n * (n - 1);
}

std::optional<uint64_t> tutel_flow_messages_bound(const Config& c) {
  const TutelConfig t = TutelConfig::from(c);
  const WorkloadConfig w = WorkloadConfig::from(c);
  const NcclConfig nccl = NcclConfig::from(c);
  const int degree = t.overlap_degree > 0 ? t.overlap_degree : 8;
  if (w.tp > 1) return static_cast<uint64_t>(3 * degree + 1) * nccl_most_chunks_in_flight(nccl, w.gpus);
  const ModelShape m = ModelShape::from(c);
  const int64_t per_gpu = (w.tokens + w.gpus - 1) / w.gpus;
  const int64_t capacity = tutel_capacity(t.capacity_factor, per_gpu, m.experts(), m.top_k(), per_gpu, degree);
  const auto n = static_cast<long double>(w.gpus);
  const long double legs = t.a2a_algo == "2dh" ? 2 : 1;
  const long double slots = n * static_cast<long double>(m.experts() + w.redundant_experts) * static_cast<long double>(capacity);
  return nccl_messages_bound(nccl, tutel_pairs(c), 2 * legs * slots * static_cast<long double>(m.row_bytes()) + n * n * kTutelIndexBytes);
}

uint64_t tutel_state_bytes(const Config& c) { return static_cast<uint64_t>(tutel_pairs(c)) * kNcclPairBytes; }

}  // namespace

SystemEntry tutel_system_entry() {
  SystemEntry e{"tutel", "Tutel: capacity-padded static buffers, pipelined all-to-all overlapped with experts",
                TutelConfig::declare, [](const Config& c) -> std::unique_ptr<MoeSystem> {
                  return std::make_unique<TutelSystem>(TutelConfig::from(c));
                },
                64, true};  // 55 B a row measured (DeepSeek-V3, 16 GPUs, 4096 -> 16384 tokens)
  e.tp_refusal = tutel_tp_refusal;  // EP+TP only on parallel_type 'model''s path
  e.flow_messages_bound = tutel_flow_messages_bound;
  e.state_bytes = tutel_state_bytes;
  return e;
}

}  // namespace moehub
