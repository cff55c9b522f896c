#include "systems/deepep/deepep_low_latency.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/error.h"

namespace moehub {
namespace {

constexpr uint64_t kLlCountBytes = 4;  // the int count (dispatch) or flag (combine), internode_ll.cu:337, :926
constexpr int64_t kLlNumMaxTopK = 11;  // internode_ll.cu:494 (dispatch), :1167 (combine)

int64_t ll_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ParamTable<DeepEpLowLatencyParams> DeepEpLowLatencyParams::table() {
  using P = DeepEpLowLatencyParams;
  ParamTable<P> t;
  t.integer("systems.deepep.ll_max_dispatch_tokens_per_rank", &P::max_dispatch_tokens,
            "Low-latency receive slots per (expert, source rank): the most tokens a rank may dispatch "
            "(num_max_dispatch_tokens_per_rank)")
      .at_least(1)
      .at_most(1 << 20);
  t.boolean("systems.deepep.ll_dispatch_fp8", &P::dispatch_fp8,
            "Low-latency dispatch casts rows to FP8 with one float scale per 128 channels (use_fp8)");
  return t;
}

DeepEpLowLatencyParams DeepEpLowLatencyParams::from(const Config& c) {
  DeepEpLowLatencyParams p;
  table().read(c, p);
  return p;
}

DeepEpLlPlan make_deepep_ll_plan(const Workload& w, int64_t max_dispatch_tokens) {
  const std::string mode = "systems.deepep.mode";
  if (w.tp().tp() > 1) throw UserError(mode, "DeepEP's low-latency kernels have no EP+TP path (parallel.tp must be 1)");
  DeepEpLlPlan p;
  p.n = static_cast<int>(w.placement().gpus());
  p.experts = static_cast<int>(w.model().experts());
  p.top_k = static_cast<int>(w.model().top_k());
  // deep_ep.cpp:1432 (num_experts % num_ranks == 0); the kernels address expert e on rank e / L.
  if (p.experts % p.n != 0) throw UserError(mode, "low-latency kernels need the experts to be a multiple of the GPUs");
  p.local = p.experts / p.n;
  for (int e = 0; e < p.experts; ++e) {
    if (w.placement().gpu_of_expert(e) != p.rank_of(e)) {
      throw UserError(mode, "low-latency kernels place expert e on GPU e / (experts per GPU); the placement differs");
    }
  }
  if (p.top_k > kLlNumMaxTopK) throw UserError(mode, "low-latency kernels take at most 11 experts per token (kLlNumMaxTopK)");
  const Routing& r = w.routing();
  for (int g = 0; g < p.n; ++g) {
    const int64_t T = w.tokens().count(g), begin = w.tokens().begin(g);
    if (T > max_dispatch_tokens) {  // deep_ep.cpp:1430
      throw UserError("systems.deepep.ll_max_dispatch_tokens_per_rank",
                      "GPU " + std::to_string(g) + " dispatches " + std::to_string(T) + " tokens, more than the receive slots (" +
                          std::to_string(max_dispatch_tokens) + "); set it to at least " + std::to_string(T));
    }
    std::vector<int32_t> sent(static_cast<size_t>(p.experts), 0);
    std::vector<DeepEpLlPlan::Msg> msgs;
    for (int64_t t = 0; t < T; ++t) {
      for (int j = 0; j < p.top_k; ++j) {
        const int32_t e = r.expert(begin + t, j);
        msgs.push_back({e, sent[static_cast<size_t>(e)]++});
      }
    }
    p.msgs.push_back(std::move(msgs));
    p.sent.push_back(std::move(sent));
  }
  // packed_recv_x: per local expert, the sources' tokens one source after another (the order in
  // which DeepEP's receivers claim rows with atomicAdd depends on arrival; source order here).
  for (int d = 0; d < p.n; ++d) {
    std::vector<int64_t> first(static_cast<size_t>(p.local * p.n));
    std::vector<uint64_t> rows(static_cast<size_t>(p.local), 0);
    int64_t row = 0;
    for (int le = 0; le < p.local; ++le) {
      for (int s = 0; s < p.n; ++s) {
        first[static_cast<size_t>(le * p.n + s)] = row;
        const int64_t k = p.sent[s][static_cast<size_t>(d * p.local + le)];
        row += k;
        rows[static_cast<size_t>(le)] += static_cast<uint64_t>(k);
      }
    }
    p.recv_first.push_back(std::move(first));
    p.per_expert.push_back(std::move(rows));
  }
  return p;
}

// internode_ll.cu:495-501 (dispatch) and :1168-1175 (combine).
LlGrid DeepEpLowLatency::grid(int64_t experts, int64_t tokens, uint32_t device_sms) {
  LlGrid g;
  g.groups = static_cast<uint32_t>(ll_ceil_div(experts, device_sms));
  g.warps_per_group = g.groups > 32 ? 0 : 32 / g.groups;
  if (g.warps_per_group == 0) return g;
  g.dispatch_sms = static_cast<uint32_t>(ll_ceil_div(experts, g.groups));
  const int64_t per_sm = ll_ceil_div(tokens, device_sms);
  g.combine_sms = std::max<uint32_t>(g.dispatch_sms, per_sm == 0 ? 1 : static_cast<uint32_t>(ll_ceil_div(tokens, per_sm)));
  return g;
}

struct DeepEpLowLatency::Block {
  int stage = 0;
  int64_t t = 0;  // local token
  int64_t m = 0;  // message (dispatch) or row (combine)
  int64_t r = 0;  // responsible expert
  int64_t end = 0;
};

namespace {

class LlProgram final : public gpu::BlockProgram {
 public:
  using Fn = std::function<gpu::Step(uint32_t block, DeepEpLowLatency::Block&)>;
  LlProgram(uint32_t blocks, Fn run) : blocks_(blocks), run_(std::move(run)) {}
  gpu::Step next(gpu::BlockState& b) override { return run_(b.block, blocks_.at(b.block)); }

 private:
  std::vector<DeepEpLowLatency::Block> blocks_;
  Fn run_;
};

}  // namespace

DeepEpLowLatency::DeepEpLowLatency(Cluster& cluster, const DeepEpLlPlan& plan, LlKernelConfig config, Hooks hooks)
    : cluster_(cluster), plan_(plan), cfg_(config), hooks_(std::move(hooks)) {
  const std::string mode = "systems.deepep.mode";
  for (int g = 0; g < plan_.n; ++g) {
    const LlGrid gr = grid(plan_.experts, plan_.tokens(g), cfg_.device_sms);
    // internode_ll.cu:497-498 and :383, :917 (a warp group of one warp cannot overlap its count wait).
    if (gr.warps_per_group < 2 || gr.groups * gr.warps_per_group < kLlNumMaxTopK + 1 || gr.groups >= 15) {
      throw UserError(mode, "low-latency kernels need ceil(experts / SMs) below 15 warp groups of at least 2 warps (" +
                                std::to_string(plan_.experts) + " experts on " + std::to_string(cfg_.device_sms) + " SMs)");
    }
    grids_.push_back(gr);
    gpu::Gpu& gp = cluster.gpu(g);
    Signals s;
    for (int i = 0; i < plan_.local * plan_.n; ++i) s.recv.push_back(gp.create_signal("deepep ll dispatch recv count"));
    for (int e = 0; e < plan_.experts; ++e) s.finish.push_back(gp.create_signal("deepep ll dispatch finish counter"));
    for (int e = 0; e < plan_.experts; ++e) s.flag.push_back(gp.create_signal("deepep ll combine recv flag"));
    s.dispatch_grid = gp.create_signal("deepep ll dispatch grid sync");
    s.combine_grid = gp.create_signal("deepep ll combine grid sync");
    sig_.push_back(std::move(s));
    issued_.push_back(0);
  }
}

DeepEpLowLatency::Path DeepEpLowLatency::path(int src, int dst) const {
  if (src == dst) return Path::Self;
  const NetConfig& net = cluster_.network().config();
  const bool same_node = !net.scale_out() || src / net.gpus_per_node == dst / net.gpus_per_node;
  return same_node ? Path::NvLink : Path::Rdma;
}

gpu::Step DeepEpLowLatency::write(int src, int dst, uint64_t bytes, gpu::SignalId signal) {
  switch (path(src, dst)) {
    case Path::Self:
      return gpu::Step::signal_add(signal, static_cast<int64_t>(bytes));
    case Path::NvLink:
      return gpu::Step::store(static_cast<uint32_t>(dst), bytes, Cluster::signal_tag(signal));
    case Path::Rdma:
      // nvshmemi_ibgda_put_nbi_warp / amo_nonfetch_add: posted, not waited for.
      cluster_.network().transfer(src, dst, bytes, 0,
                                  [this, dst, bytes, signal] { cluster_.deliver_write(dst, bytes, Cluster::signal_tag(signal)); });
      return gpu::Step::compute(Time::zero());
  }
  throw std::logic_error("DeepEP low-latency: bad path");
}

gpu::KernelSpec DeepEpLowLatency::kernel(int g, const char* name, uint32_t blocks, bool dispatch) {
  gpu::KernelSpec spec;
  spec.name = name;
  spec.blocks = blocks;
  spec.shape.threads = grids_[g].threads();
  spec.shape.max_blocks_per_sm = 1;  // __launch_bounds__(1024, 1), a cooperative grid
  spec.program = std::make_shared<LlProgram>(blocks, [this, g, dispatch](uint32_t s, Block& x) {
    return dispatch ? dispatch_step(g, s, x) : combine_step(g, s, x);
  });
  return spec;
}

gpu::KernelSpec DeepEpLowLatency::dispatch(int g) {
  once(g, 1, "dispatch");
  return kernel(g, "deepep_ll_dispatch", grids_[g].dispatch_sms, true);
}

gpu::KernelSpec DeepEpLowLatency::combine(int g) {
  once(g, 2, "combine");
  return kernel(g, "deepep_ll_combine", grids_[g].combine_sms, false);
}

// A second launch would wait on thresholds the first one already reached (header: one layer).
void DeepEpLowLatency::once(int g, uint8_t bit, const char* what) {
  if (issued_[g] & bit) {
    throw std::logic_error(std::string("DeepEP low-latency: ") + what + " issued twice on GPU " + std::to_string(g) +
                           "; its signals are never cleared (one layer per run)");
  }
  issued_[g] = static_cast<uint8_t>(issued_[g] | bit);
}

// ---- dispatch (internode_ll.cu:129-463) ----

gpu::Step DeepEpLowLatency::dispatch_step(int g, uint32_t s, Block& x) {
  const LlGrid& gr = grids_[g];
  const Signals& sg = sig_[g];
  const int k = plan_.top_k;
  const int64_t T = plan_.tokens(g);
  for (;;) {
    switch (x.stage) {
      case 0:  // the last warp reads topk_idx to count its experts' tokens (:299-320)
        x.t = s;
        x.stage = 1;
        return gpu::Step::memory(static_cast<uint64_t>(T * k) * cfg_.topk_idx_bytes);
      case 1:  // the next token of this CTA (:203): cast into the send buffer (:209-252)
        if (x.t >= T) {
          x.r = static_cast<int64_t>(s) * gr.groups;
          x.end = std::min<int64_t>(x.r + gr.groups, plan_.experts);
          x.stage = 4;
          break;
        }
        x.m = x.t * k;
        x.stage = 2;
        return gpu::Step::memory(cfg_.row_bytes + cfg_.msg_bytes);
      case 2: {  // warp j sends the message to the token's slot-j expert (:255-274)
        if (x.m >= (x.t + 1) * k) {
          x.t += gr.dispatch_sms;
          x.stage = 1;
          break;
        }
        const DeepEpLlPlan::Msg& msg = plan_.msgs[g][static_cast<size_t>(x.m)];
        const int dst = plan_.rank_of(msg.expert);
        const gpu::SignalId recv = sig_[dst].recv[static_cast<size_t>(plan_.local_of(msg.expert) * plan_.n + g)];
        x.stage = 3;
        if (path(g, dst) == Path::Self) {  // the warp copy through the P2P pointer to itself
          x.stage = 30;
          return gpu::Step::memory(2 * cfg_.msg_bytes);
        }
        return write(g, dst, cfg_.msg_bytes, recv);
      }
      case 30: {  // (self) the copied message is in place
        const DeepEpLlPlan::Msg& msg = plan_.msgs[g][static_cast<size_t>(x.m)];
        x.stage = 3;
        return gpu::Step::signal_add(sg.recv[static_cast<size_t>(plan_.local_of(msg.expert) * plan_.n + g)],
                                     static_cast<int64_t>(cfg_.msg_bytes));
      }
      case 3: {  // atomic_finish_counter_per_expert (:276-278)
        const DeepEpLlPlan::Msg& msg = plan_.msgs[g][static_cast<size_t>(x.m)];
        ++x.m;
        x.stage = 2;
        return gpu::Step::signal_add(sg.finish[static_cast<size_t>(msg.expert)], 1);
      }
      case 4:  // responsible experts: every CTA's messages issued, then the count (:324-341)
        if (x.r >= x.end) {
          x.stage = 6;
          return gpu::Step::signal_add(sg.dispatch_grid, 1);  // cg::this_grid().sync() (:358-360)
        }
        x.stage = 5;
        return gpu::Step::wait(sg.finish[static_cast<size_t>(x.r)], plan_.sent[g][static_cast<size_t>(x.r)], gpu::WaitMode::Poll);
      case 5: {
        const int e = static_cast<int>(x.r++);
        const int dst = plan_.rank_of(e);
        x.stage = 4;
        return write(g, dst, kLlCountBytes, sig_[dst].recv[static_cast<size_t>(plan_.local_of(e) * plan_.n + g)]);
      }
      case 6:
        x.stage = 7;
        return gpu::Step::wait(sg.dispatch_grid, gr.dispatch_sms, gpu::WaitMode::Poll);
      case 7:
        x.r = static_cast<int64_t>(s) * gr.groups;
        x.end = std::min<int64_t>(x.r + gr.groups, plan_.experts);
        x.stage = 8;
        break;
      default:
        return dispatch_recv(g, s, x);
    }
  }
}

// Receiving (:362-461): warp group (local expert le, source src) polls the count, which lands
// after the messages (same queue pair, or a release store after the copies), then copies.
gpu::Step DeepEpLowLatency::dispatch_recv(int g, uint32_t, Block& x) {
  for (;;) {
    const int e = static_cast<int>(x.r);
    const int src = e / plan_.local, le = e % plan_.local;
    switch (x.stage) {
      case 8: {
        if (x.r >= x.end) return gpu::Step::done();
        const int64_t n = plan_.sent[src][static_cast<size_t>(g * plan_.local + le)];
        x.stage = 9;
        return gpu::Step::wait(sig_[g].recv[static_cast<size_t>(le * plan_.n + src)],
                               n * static_cast<int64_t>(cfg_.msg_bytes) + static_cast<int64_t>(kLlCountBytes), gpu::WaitMode::Poll);
      }
      case 9: {
        const int64_t n = plan_.sent[src][static_cast<size_t>(g * plan_.local + le)];
        x.stage = 10;
        return gpu::Step::memory(static_cast<uint64_t>(n) * (cfg_.msg_bytes + cfg_.recv_row_bytes));
      }
      case 10:
        if (hooks_.dispatch_recv) hooks_.dispatch_recv(g, le, src);
        ++x.r;
        x.stage = 8;
        break;
      default:
        throw std::logic_error("DeepEP low-latency dispatch: bad stage");
    }
  }
}

// ---- combine (internode_ll.cu:716-1139) ----

// Sending (:789-941): warp group (rank dst, local expert le) sends the rows of le that came from
// dst back into dst's slot (expert, source token), then the flag.
gpu::Step DeepEpLowLatency::combine_step(int g, uint32_t s, Block& x) {
  const LlGrid& gr = grids_[g];
  for (;;) {
    const int e = static_cast<int>(x.r);
    const int dst = e / plan_.local, le = e % plan_.local;
    const int global = g * plan_.local + le;
    switch (x.stage) {
      case 0:
        x.r = static_cast<int64_t>(s) * gr.groups;
        x.end = std::min<int64_t>(x.r + gr.groups, plan_.experts);
        x.stage = 1;
        break;
      case 1:
        if (x.r >= x.end) {
          x.r = static_cast<int64_t>(s) * gr.groups;
          x.stage = 5;
          break;
        }
        x.m = 0;
        x.stage = 2;
        break;
      case 2: {
        if (x.m >= plan_.sent[dst][static_cast<size_t>(global)]) {
          x.stage = 4;
          break;
        }
        x.stage = 3;
        // TMA load of the row; into the send buffer for RDMA, or the local slot for itself.
        return gpu::Step::memory(path(g, dst) == Path::NvLink ? cfg_.row_bytes : 2 * cfg_.row_bytes);
      }
      case 3:
        ++x.m;
        x.stage = 2;
        return write(g, dst, cfg_.row_bytes, sig_[dst].flag[static_cast<size_t>(global)]);
      case 4:
        ++x.r;
        x.stage = 1;
        return write(g, dst, kLlCountBytes, sig_[dst].flag[static_cast<size_t>(global)]);
      default:
        return combine_recv(g, s, x);
    }
  }
}

// Receiving (:948-1137): each responsible expert's flag, the grid sync, then the CTA's tokens
// (s, s + S, ...; both reduction groups) read their top-k rows and write the weighted sum.
gpu::Step DeepEpLowLatency::combine_recv(int g, uint32_t s, Block& x) {
  const LlGrid& gr = grids_[g];
  const Signals& sg = sig_[g];
  const int k = plan_.top_k;
  switch (x.stage) {
    case 5:
      if (x.r >= x.end) {
        x.stage = 6;
        return gpu::Step::signal_add(sg.combine_grid, 1);
      } else {
        const int e = static_cast<int>(x.r++);
        return gpu::Step::wait(sg.flag[static_cast<size_t>(e)],
                               plan_.sent[g][static_cast<size_t>(e)] * static_cast<int64_t>(cfg_.row_bytes) +
                                   static_cast<int64_t>(kLlCountBytes),
                               gpu::WaitMode::Poll);
      }
    case 6:
      x.stage = 7;
      x.t = s;
      return gpu::Step::wait(sg.combine_grid, gr.combine_sms, gpu::WaitMode::Poll);
    case 7:
      if (x.t >= plan_.tokens(g)) return gpu::Step::done();
      x.stage = 8;
      return gpu::Step::memory(static_cast<uint64_t>(k + 1) * cfg_.row_bytes);
    case 8:
      if (hooks_.combine_token) hooks_.combine_token(g, x.t);
      x.t += gr.combine_sms;
      x.stage = 7;
      return gpu::Step::compute(Time::zero());
    default:
      throw std::logic_error("DeepEP low-latency combine: bad stage");
  }
}

}  // namespace moehub
