#include "systems/deepep/deepep_internode.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/error.h"

namespace moehub {
namespace deepep_internode_roles {

enum class Role : uint8_t { Idle, RdmaSender, Forwarder, NvlReceiver, NvlSender, CombineForwarder, RdmaReceiver };

}  // namespace deepep_internode_roles
namespace {

using deepep_internode_roles::Role;
constexpr uint64_t kAmoBytes = 8;         // nvshmemi_ibgda_amo_nonfetch_add on a uint64 tail or head
constexpr uint64_t kNvlHeadBytes = 4;   // an int32 NVLink head index
constexpr uint64_t kHeadPerTokenBytes = 4;  // combine NVLink heads: the signal counts tokens (docs)

// The role of warp group `i` of the CTA on SM `sm` (internode.cu:484-498 for dispatch,
// 1729-1747 for combine), with its peer indices.
struct RoleOf {
  Role role = Role::Idle;
  int a = 0, b = 0;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const char* spec_name(bool dispatch) { return dispatch ? "deepep_internode_dispatch" : "deepep_internode_combine"; }

constexpr int kNumMaxNvlPeers = 8;  // NUM_MAX_NVL_PEERS: every internode CTA has warps for 8 NVLink peers

void ring_params(ParamTable<DeepEpInternodeParams>& t, const std::string& kernel, InternodeRing DeepEpInternodeParams::*ring) {
  using P = DeepEpInternodeParams;
  const std::string k = "systems.deepep.internode_" + kernel + "_";
  t.integer(k + "nvl_chunk_tokens", [ring](P& p) -> int64_t& { return (p.*ring).nvl_chunk; },
            "Tokens an internode " + kernel + " NVLink sender stores per step (num_max_nvl_chunked_send_tokens)")
      .at_least(1)
      .at_most(1 << 20);
  t.integer(k + "nvl_ring_tokens", [ring](P& p) -> int64_t& { return (p.*ring).nvl_ring; },
            "Internode " + kernel + " NVLink ring slots per (channel, peer) (num_max_nvl_chunked_recv_tokens)")
      .at_least(1)
      .at_most(1 << 20);
  t.integer(k + "rdma_chunk_tokens", [ring](P& p) -> int64_t& { return (p.*ring).rdma_chunk; },
            "Tokens per internode " + kernel + " RDMA put (num_max_rdma_chunked_send_tokens)")
      .at_least(1)
      .at_most(1 << 20);
  t.integer(k + "rdma_ring_tokens", [ring](P& p) -> int64_t& { return (p.*ring).rdma_ring; },
            "Internode " + kernel + " RDMA ring slots per (channel, node) before rounding up to whole chunks "
            "(num_max_rdma_chunked_recv_tokens)")
      .at_least(1)
      .at_most(1 << 20);
}

}  // namespace

ParamTable<DeepEpInternodeParams> DeepEpInternodeParams::table() {
  using P = DeepEpInternodeParams;
  ParamTable<P> t;
  t.integer("systems.deepep.internode_dispatch_sender_warps", &P::dispatch_sender_warps,
            "RDMA sender warps per internode dispatch CTA (kNumDispatchRDMASenderWarps)")
      .at_least(1)
      .at_most(32);
  t.integer("systems.deepep.internode_combine_forwarder_warps", &P::combine_forwarder_warps,
            "Forwarder warps per internode combine CTA (kNumCombineForwarderWarps)")
      .at_least(1)
      .at_most(32);
  ring_params(t, "dispatch", &P::d);
  ring_params(t, "combine", &P::c);
  return t;
}

DeepEpInternodeParams DeepEpInternodeParams::from(const Config& c) {
  DeepEpInternodeParams p;
  table().read(c, p);
  // csrc/config.hpp:41-49: the send chunk below the ring, at most half the RDMA ring.
  for (const auto& [name, r] : {std::pair<const char*, InternodeRing>{"dispatch", p.d}, {"combine", p.c}}) {
    const std::string k = std::string("systems.deepep.internode_") + name + "_";
    if (r.nvl_chunk >= r.nvl_ring) throw UserError(k + "nvl_chunk_tokens", "must be below the NVLink ring size");
    if (2 * r.rdma_chunk > r.rdma_ring) throw UserError(k + "rdma_chunk_tokens", "must be at most half the RDMA ring size");
  }
  // The model's own bound (stricter than config.hpp's): its dispatch forwarder restarts a batch at
  // each RDMA chunk boundary while the receiver returns heads per whole NVLink chunk, so a ring
  // under two chunks could wait on a chunk that is never completed.
  if (p.d.nvl_ring < 2 * p.d.nvl_chunk) {
    throw UserError("systems.deepep.internode_dispatch_nvl_ring_tokens", "must be at least twice the NVLink chunk");
  }
  return p;
}

namespace {

// DeepEP's host checks of the combine's NVLink ring against the node count (internode.cu:2333-2339
// and deep_ep.cpp:1266-1267 at 2be0d4f8), and the model's own deadlock-free bound: a forwarder
// gathers up to one RDMA chunk from a source before it returns a head, so each node's share of the
// ring must hold that chunk and one NVLink chunk less a token.
void check_combine_ring(const InternodeRing& c, int64_t forwarder_warps, int64_t nodes, int64_t per_forwarder) {
  const std::string ring = "systems.deepep.internode_combine_nvl_ring_tokens";
  const std::string with = " with " + std::to_string(nodes) + " nodes";
  if (nodes > forwarder_warps) {
    throw UserError("systems.deepep.internode_combine_forwarder_warps", "must be at least the node count" + with);
  }
  if (c.nvl_ring % nodes != 0) throw UserError(ring, "must be a multiple of the node count" + with);
  const int64_t share = c.nvl_ring / nodes;
  if (share <= std::max(c.rdma_chunk, c.nvl_chunk) || share < per_forwarder + c.nvl_chunk ||
      share + 1 < c.rdma_chunk + c.nvl_chunk) {
    throw UserError(ring, "each node's share (" + std::to_string(share) +
                              " tokens) must exceed the RDMA and NVLink chunks and hold both less one token" + with);
  }
  if (c.rdma_chunk < per_forwarder) {
    throw UserError("systems.deepep.internode_combine_rdma_chunk_tokens", "must be at least the warps per forwarder" + with);
  }
}

}  // namespace

InternodeKernelConfig DeepEpInternode::config(const DeepEpInternodeParams& p, uint32_t num_sms, int nodes) {
  InternodeKernelConfig k;
  k.num_sms = num_sms;
  k.d = p.d;
  k.c = p.c;
  k.d.rdma_ring = ceil_div(p.d.rdma_ring, p.d.rdma_chunk) * p.d.rdma_chunk;
  k.c.rdma_ring = ceil_div(p.c.rdma_ring, p.c.rdma_chunk) * p.c.rdma_chunk;
  // internode.cu:1277: (kNumDispatchRDMASenderWarps + 1 + NUM_MAX_NVL_PEERS) warps; 2331-2342:
  // R x max(kNumCombineForwarderWarps / R, 1) forwarder warps and a coordinator.
  k.dispatch_threads = (p.dispatch_sender_warps + 1 + kNumMaxNvlPeers) * 32;
  const uint32_t r = static_cast<uint32_t>(nodes);
  const uint32_t per_forwarder = std::max<uint32_t>(p.combine_forwarder_warps / r, 1);
  check_combine_ring(p.c, p.combine_forwarder_warps, r, per_forwarder);  // before any launch
  k.combine_threads = (r * per_forwarder + 1) * 32;
  return k;
}

struct DeepEpInternode::Signals {
  // Dispatch: [c * R + node], [c * R + node], [c * L + local], [c * L + local].
  std::vector<gpu::SignalId> rdma_tail, rdma_head, nvl_tail, nvl_head;
  // Combine: nvl_tail/head [(c * L + local) * R + node], rdma_tail/head [c * R + node].
  std::vector<gpu::SignalId> c_nvl_tail, c_nvl_head, c_rdma_tail, c_rdma_head;
};

struct DeepEpInternode::Group {
  bool assigned = false;
  deepep_internode_roles::Role role = deepep_internode_roles::Role::Idle;
  int channel = 0, a = 0, b = 0;
  int64_t k = 0;       // chunk (or unit) index
  int64_t j = 0;       // items done
  int64_t batch = 0, stored = 0;
  int stage = 0, l = 0;
  std::vector<int64_t> cum;  // combine forwarder: contributions of each local rank so far
  std::vector<int64_t> add;  // ... in the current chunk
};

namespace {

class GroupProgram final : public gpu::BlockProgram {
 public:
  using Fn = std::function<gpu::Step(DeepEpInternode::Group&)>;
  using Assign = std::function<RoleOf(uint32_t sm, int index)>;
  GroupProgram(std::string name, uint32_t num_sms, uint32_t grid, Assign assign, Fn run)
      : name_(std::move(name)), num_sms_(num_sms), groups_(grid), per_sm_(num_sms, 0), assign_(std::move(assign)),
        run_(std::move(run)) {}

  gpu::Step next(gpu::BlockState& b) override {
    if (b.step == 0) return gpu::Step::compute(Time::zero());  // the role follows from the SM
    DeepEpInternode::Group& x = groups_.at(b.block);
    if (!x.assigned) {
      if (b.sm < 0 || static_cast<uint32_t>(b.sm) >= num_sms_) throw std::logic_error(name_ + ": block outside its SMs");
      const uint32_t sm = static_cast<uint32_t>(b.sm);
      const RoleOf r = assign_(sm, per_sm_[sm]++);
      x.assigned = true;
      x.role = r.role;
      x.channel = static_cast<int>(sm / 2);
      x.a = r.a;
      x.b = r.b;
    }
    return x.role == Role::Idle ? gpu::Step::done() : run_(x);
  }

 private:
  std::string name_;
  uint32_t num_sms_;
  std::vector<DeepEpInternode::Group> groups_;
  std::vector<int> per_sm_;
  Assign assign_;
  Fn run_;
};

}  // namespace

DeepEpInternode::DeepEpInternode(Cluster& cluster, const DeepEpPlan& plan, const DeepEpInternodePlan& inter,
                                 InternodeKernelConfig config, Hooks hooks)
    : cluster_(cluster), plan_(plan), inter_(inter), cfg_(config), hooks_(std::move(hooks)) {
  if (cfg_.num_sms < 2 || cfg_.num_sms % 2 != 0) throw std::logic_error("DeepEP kernels need an even SM count");
  const int ch = inter_.channels, R = inter_.nodes, L = inter_.per_node;
  for (int g = 0; g < inter_.n; ++g) {
    gpu::Gpu& gp = cluster.gpu(g);
    Signals s;
    auto make = [&gp](std::vector<gpu::SignalId>& v, int count, const char* name) {
      for (int i = 0; i < count; ++i) v.push_back(gp.create_signal(name));
    };
    make(s.rdma_tail, ch * R, "deepep internode dispatch rdma tail");
    make(s.rdma_head, ch * R, "deepep internode dispatch rdma head");
    make(s.nvl_tail, ch * L, "deepep internode dispatch nvl tail");
    make(s.nvl_head, ch * L, "deepep internode dispatch nvl head");
    make(s.c_nvl_tail, ch * L * R, "deepep internode combine nvl tail");
    make(s.c_nvl_head, ch * L * R, "deepep internode combine nvl head");
    make(s.c_rdma_tail, ch * R, "deepep internode combine rdma tail");
    make(s.c_rdma_head, ch * R, "deepep internode combine rdma head");
    sig_.push_back(std::move(s));
  }
  for (int q = 0; q < inter_.n; ++q) {
    for (int c = 0; c < ch; ++c) forwarded_.emplace_back(inter_.fwd(q, c).chunks.size(), 0);
  }
}

DeepEpInternode::~DeepEpInternode() = default;

gpu::Step DeepEpInternode::put(int src, int dst, uint64_t bytes, gpu::SignalId tail) {
  // To its own GPU the rows were already written by the step before; only the tail moves.
  if (src == dst) return gpu::Step::signal_add(tail, static_cast<int64_t>(bytes));
  cluster_.network().transfer(src, dst, bytes + kAmoBytes, 0,
                              [this, dst, bytes, tail] { cluster_.deliver_write(dst, bytes, Cluster::signal_tag(tail)); });
  return gpu::Step::compute(Time::zero());
}

void DeepEpInternode::head_amo(int src, int dst, gpu::SignalId head) {
  if (src == dst) {
    cluster_.sim().schedule_in(Time::zero(), [this, dst, head] { cluster_.gpu(dst).signal_add(head, static_cast<int64_t>(kAmoBytes)); });
    return;
  }
  cluster_.network().transfer(src, dst, kAmoBytes, 0,
                              [this, dst, head] { cluster_.deliver_write(dst, kAmoBytes, Cluster::signal_tag(head)); });
}

// The forwarder coordinator (internode.cu kForwarderCoordinator): once every forwarder of
// the channel has passed an RDMA chunk, its slots go back to the source as a head atomic.
void DeepEpInternode::chunk_forwarded(int q, int c, size_t chunk) {
  std::vector<int>& done = forwarded_[static_cast<size_t>(q * inter_.channels + c)];
  if (++done[chunk] < inter_.per_node) return;
  const int rs = inter_.fwd(q, c).chunks[chunk].src_node;
  head_amo(q, inter_.gpu(rs, inter_.local(q)), sig_[static_cast<size_t>(inter_.gpu(rs, inter_.local(q)))]
                                                  .rdma_head[static_cast<size_t>(c * inter_.nodes + inter_.node(q))]);
}

// Both kernels: persistent on SMs [0, num_sms), R + L warp groups per CTA, roles by SM.
gpu::KernelSpec DeepEpInternode::kernel(int g, const char* name, uint32_t threads, bool dispatch) {
  const int G = groups(), R = inter_.nodes, L = inter_.per_node;
  gpu::KernelSpec spec;
  spec.name = name;
  spec.persistent = true;
  spec.sms = {0, cfg_.num_sms};
  spec.shape.threads = std::max<uint32_t>(32, threads / static_cast<uint32_t>(G));
  spec.shape.max_blocks_per_sm = static_cast<uint32_t>(G);
  auto assign = [R, L, dispatch](uint32_t sm, int i) -> RoleOf {
    if (dispatch) {
      if (sm % 2 == 0) return i < L ? RoleOf{Role::Forwarder, i, 0} : RoleOf{};
      return i < R ? RoleOf{Role::RdmaSender, i, 0} : RoleOf{Role::NvlReceiver, i - R, 0};
    }
    if (sm % 2 == 1) return i < R ? RoleOf{Role::CombineForwarder, i, 0} : RoleOf{};
    return i < L ? RoleOf{Role::NvlSender, i, 0} : RoleOf{Role::RdmaReceiver, i - L, 0};
  };
  auto run = [this, g, dispatch](Group& x) -> gpu::Step {
    switch (x.role) {
      case Role::RdmaSender: return rdma_sender(g, x);
      case Role::Forwarder: return forwarder(g, x);
      case Role::NvlReceiver: return nvl_receiver(g, x);
      case Role::NvlSender: return nvl_sender(g, x);
      case Role::CombineForwarder: return combine_forwarder(g, x);
      case Role::RdmaReceiver: return rdma_receiver(g, x);
      default: throw std::logic_error(std::string(spec_name(dispatch)) + ": bad role");
    }
  };
  spec.program = std::make_shared<GroupProgram>(spec.name, cfg_.num_sms, cfg_.num_sms * static_cast<uint32_t>(G), assign, run);
  return spec;
}

gpu::KernelSpec DeepEpInternode::dispatch(int g) { return kernel(g, spec_name(true), cfg_.dispatch_threads, true); }
gpu::KernelSpec DeepEpInternode::combine(int g) { return kernel(g, spec_name(false), cfg_.combine_threads, false); }

// ---- dispatch ----

// Group (channel c, destination node a): internode.cu kRDMASender + kRDMASenderCoordinator.
gpu::Step DeepEpInternode::rdma_sender(int g, Group& x) {
  const int c = x.channel, r = x.a, R = inter_.nodes;
  const DeepEpInternodePlan::Stream& st = inter_.stream(g, r, c);
  const int relay = inter_.gpu(r, inter_.local(g));
  const int64_t K = cfg_.d.rdma_chunk, first = x.k * K, count = std::min(K, st.size() - first);
  const uint64_t tb = cfg_.dispatch_token_bytes;
  for (;;) {
    switch (x.stage) {
      case 0: {
        if (first >= st.size()) return gpu::Step::done();
        x.stage = 1;
        // Room in the relay's ring: it must have returned the chunks before this one's slots.
        const int64_t need = first + count - cfg_.d.rdma_ring;
        if (need > 0) {
          return gpu::Step::wait(sig_[static_cast<size_t>(g)].rdma_head[static_cast<size_t>(c * R + r)],
                                 ceil_div(need, K) * static_cast<int64_t>(kAmoBytes), gpu::WaitMode::Poll);
        }
        break;
      }
      case 1:
        // Load each token's row and write it with its metadata into the send buffer (or, for
        // its own node, straight into the relay's ring, which is this GPU's).
        x.stage = 2;
        return gpu::Step::memory(static_cast<uint64_t>(count) * (cfg_.row_bytes + tb));
      case 2: {
        x.stage = 0;
        ++x.k;
        const gpu::SignalId tail = sig_[static_cast<size_t>(relay)].rdma_tail[static_cast<size_t>(c * R + inter_.node(g))];
        return put(g, relay, static_cast<uint64_t>(count) * tb, tail);
      }
      default:
        throw std::logic_error("DeepEP RDMA sender: bad stage");
    }
  }
}

// Group (channel c, destination local rank a) on relay g: kRDMAAndNVLForwarder.
gpu::Step DeepEpInternode::forwarder(int g, Group& x) {
  const int c = x.channel, l = x.a, R = inter_.nodes;
  const DeepEpInternodePlan::Forward& f = inter_.fwd(g, c);
  const int dst = inter_.gpu(inter_.node(g), l);
  const uint64_t tb = cfg_.dispatch_token_bytes;
  const int64_t U = cfg_.d.nvl_chunk;
  for (;;) {
    if (x.k >= static_cast<int64_t>(f.chunks.size())) return gpu::Step::done();
    const DeepEpInternodePlan::Chunk& ck = f.chunks[static_cast<size_t>(x.k)];
    const int64_t end = f.chunk_end[static_cast<size_t>(l)][static_cast<size_t>(x.k)];
    switch (x.stage) {
      case 0:
        x.stage = 1;
        return gpu::Step::wait(sig_[static_cast<size_t>(g)].rdma_tail[static_cast<size_t>(c * R + ck.src_node)],
                               (ck.first + ck.count) * static_cast<int64_t>(tb), gpu::WaitMode::Poll);
      case 1: {
        if (x.j >= end) {  // this chunk is passed: tell the coordinator
          chunk_forwarded(g, c, static_cast<size_t>(x.k));
          ++x.k;
          x.stage = 0;
          break;
        }
        x.batch = std::min(U, end - x.j);
        x.stage = 2;
        const int64_t need = x.j + x.batch - cfg_.d.nvl_ring;  // receiver heads come per U tokens
        if (need > 0) {
          return gpu::Step::wait(sig_[static_cast<size_t>(g)].nvl_head[static_cast<size_t>(c * inter_.per_node + l)],
                                 ceil_div(need, U) * static_cast<int64_t>(kNvlHeadBytes), gpu::WaitMode::Poll);
        }
        break;
      }
      case 2:
        x.stage = 3;
        x.stored = 0;
        return gpu::Step::memory(static_cast<uint64_t>(x.batch) * tb);  // TMA load from the RDMA ring
      case 3:
        if (x.stored < x.batch) {
          ++x.stored;
          return gpu::Step::store(static_cast<uint32_t>(dst), tb,
                                  Cluster::signal_tag(sig_[static_cast<size_t>(dst)]
                                                          .nvl_tail[static_cast<size_t>(c * inter_.per_node + inter_.local(g))]));
        }
        x.j += x.batch;
        x.stage = 1;
        break;
      default:
        throw std::logic_error("DeepEP forwarder: bad stage");
    }
  }
}

// Group (channel c, forwarding local rank a): kNVLReceivers.
gpu::Step DeepEpInternode::nvl_receiver(int g, Group& x) {
  const int c = x.channel, lf = x.a;
  const int q = inter_.gpu(inter_.node(g), lf);
  const std::vector<DeepEpInternodePlan::Item>& items = inter_.fwd(q, c).items[static_cast<size_t>(inter_.local(g))];
  const int64_t total = static_cast<int64_t>(items.size()), U = cfg_.d.nvl_chunk;
  const int64_t first = x.k * U, count = std::min(U, total - first);
  const uint64_t tb = cfg_.dispatch_token_bytes;
  switch (x.stage) {
    case 0:
      if (first >= total) return gpu::Step::done();
      x.stage = 1;
      return gpu::Step::wait(sig_[static_cast<size_t>(g)].nvl_tail[static_cast<size_t>(c * inter_.per_node + lf)],
                             (first + count) * static_cast<int64_t>(tb), gpu::WaitMode::Poll);
    case 1:
      x.stage = 2;
      return gpu::Step::memory(2 * static_cast<uint64_t>(count) * tb);  // ring to recv_x
    case 2:
      if (hooks_.dispatch_token) {
        for (int64_t i = first; i < first + count; ++i) {
          const DeepEpInternodePlan::Item& it = items[static_cast<size_t>(i)];
          hooks_.dispatch_token(g, c, it.src, it.index);
        }
      }
      ++x.k;
      x.stage = 0;
      return gpu::Step::store(static_cast<uint32_t>(q), kNvlHeadBytes,
                              Cluster::signal_tag(sig_[static_cast<size_t>(q)].nvl_head[static_cast<size_t>(c * inter_.per_node + inter_.local(g))]));
    default:
      throw std::logic_error("DeepEP NVLink receiver: bad stage");
  }
}

// ---- combine ----

// Group (channel c, relay local rank a) on expert GPU g: kNVLSender, one lane per source node
// (internode.cu:1776-1815): it takes the next lane, round robin from (c + 1) % R, that has
// tokens left and room for a chunk in its part of the relay's ring (ring / R slots), and sends
// one chunk of it; when no lane has room it waits on the first unfinished lane's head.
gpu::Step DeepEpInternode::nvl_sender(int g, Group& x) {
  const int c = x.channel, lr = x.a, R = inter_.nodes, L = inter_.per_node;
  const int relay = inter_.gpu(inter_.node(g), lr);
  const int64_t U = cfg_.c.nvl_chunk, ring = cfg_.c.nvl_ring / R;  // num_max_nvl_chunked_recv_tokens_per_rdma
  auto total = [&](int rs) { return static_cast<int64_t>(plan_.send(inter_.gpu(rs, lr), g)[static_cast<size_t>(c)].size()); };
  auto head = [&](int rs) { return sig_[static_cast<size_t>(g)].c_nvl_head[static_cast<size_t>((c * L + lr) * R + rs)]; };
  if (x.cum.empty()) {
    x.cum.assign(static_cast<size_t>(R), 0);  // tokens sent per lane
    x.l = c % R;                              // the lane before the first
  }
  switch (x.stage) {
    case 0: {
      int waiting = -1;
      for (int i = 1; i <= R; ++i) {
        const int rs = (x.l + i) % R;
        const int64_t sent = x.cum[static_cast<size_t>(rs)];
        if (sent >= total(rs)) continue;
        const int64_t consumed = cluster_.gpu(g).signal_value(head(rs)) / static_cast<int64_t>(kHeadPerTokenBytes);
        if (ring - (sent - consumed) >= std::min(U, total(rs) - sent)) {
          x.l = x.b = rs;
          x.batch = std::min(U, total(rs) - sent);
          x.stage = 1;
          return gpu::Step::memory(static_cast<uint64_t>(x.batch) * cfg_.row_bytes);  // TMA load of the rows
        }
        if (waiting < 0) waiting = rs;
      }
      if (waiting < 0) return gpu::Step::done();
      const int64_t sent = x.cum[static_cast<size_t>(waiting)];
      const int64_t need = sent + std::min(U, total(waiting) - sent) - ring;
      return gpu::Step::wait(head(waiting), need * static_cast<int64_t>(kHeadPerTokenBytes), gpu::WaitMode::Poll);
    }
    case 1:
      if (x.stored < x.batch) {
        ++x.stored;
        return gpu::Step::store(static_cast<uint32_t>(relay), cfg_.combine_token_bytes,
                                Cluster::signal_tag(sig_[static_cast<size_t>(relay)]
                                                        .c_nvl_tail[static_cast<size_t>((c * L + inter_.local(g)) * R + x.b)]));
      }
      x.cum[static_cast<size_t>(x.b)] += x.batch;
      x.stored = 0;
      x.stage = 0;
      return nvl_sender(g, x);
    default:
      throw std::logic_error("DeepEP NVLink sender: bad stage");
  }
}

// Group (channel c, source node a) on relay g: kNVLAndRDMAForwarder for one RDMA rank.
gpu::Step DeepEpInternode::combine_forwarder(int g, Group& x) {
  const int c = x.channel, rs = x.a, R = inter_.nodes, L = inter_.per_node, r = inter_.node(g);
  const int src = inter_.gpu(rs, inter_.local(g));
  const DeepEpInternodePlan::Stream& st = inter_.stream(src, r, c);
  const int64_t K = cfg_.c.rdma_chunk, first = x.k * K, count = std::min(K, st.size() - first);
  const uint64_t tb = cfg_.combine_token_bytes;
  if (x.cum.empty()) {
    x.cum.assign(static_cast<size_t>(L), 0);
    x.add.assign(static_cast<size_t>(L), 0);
  }
  for (;;) {
    switch (x.stage) {
      case 0: {
        if (first >= st.size()) return gpu::Step::done();
        for (int l = 0; l < L; ++l) {
          int64_t n = 0;
          for (int64_t t = first; t < first + count; ++t) n += st.at(t, l, L) >= 0 ? 1 : 0;
          x.add[static_cast<size_t>(l)] = n;
        }
        x.stage = 1;
        x.l = 0;
        const int64_t need = first + count - cfg_.c.rdma_ring;  // room in the source's RDMA ring
        if (need > 0) {
          return gpu::Step::wait(sig_[static_cast<size_t>(g)].c_rdma_head[static_cast<size_t>(c * R + rs)],
                                 ceil_div(need, K) * static_cast<int64_t>(kAmoBytes), gpu::WaitMode::Poll);
        }
        break;
      }
      case 1:  // every local rank's contributions to the chunk have landed
        while (x.l < L && x.add[static_cast<size_t>(x.l)] == 0) ++x.l;
        if (x.l < L) {
          const int l = x.l++;
          return gpu::Step::wait(sig_[static_cast<size_t>(g)].c_nvl_tail[static_cast<size_t>((c * L + l) * R + rs)],
                                 (x.cum[static_cast<size_t>(l)] + x.add[static_cast<size_t>(l)]) * static_cast<int64_t>(tb),
                                 gpu::WaitMode::Poll);
        }
        x.stage = 2;
        {
          int64_t in = 0;
          for (int64_t a : x.add) in += a;
          // Read every contribution, write the reduced token into the send buffer.
          return gpu::Step::memory(static_cast<uint64_t>(in + count) * tb);
        }
      case 2:  // NVLink heads back to the senders, as token counts
        while (x.l > 0) {
          const int l = --x.l;
          const int64_t a = x.add[static_cast<size_t>(l)];
          if (a == 0) continue;
          x.cum[static_cast<size_t>(l)] += a;
          const int expert = inter_.gpu(r, l);
          return gpu::Step::store(static_cast<uint32_t>(expert), static_cast<uint64_t>(a) * kHeadPerTokenBytes,
                                  Cluster::signal_tag(sig_[static_cast<size_t>(expert)]
                                                          .c_nvl_head[static_cast<size_t>((c * L + inter_.local(g)) * R + rs)]));
        }
        x.stage = 0;
        ++x.k;
        {
          const gpu::SignalId tail = sig_[static_cast<size_t>(src)].c_rdma_tail[static_cast<size_t>(c * R + r)];
          return put(g, src, static_cast<uint64_t>(count) * tb, tail);
        }
      default:
        throw std::logic_error("DeepEP combine forwarder: bad stage");
    }
  }
}

// Group (channel c, relay node a) on source g: kRDMAReceiver, one chunk at a time.
gpu::Step DeepEpInternode::rdma_receiver(int g, Group& x) {
  const int c = x.channel, r = x.a, R = inter_.nodes, L = inter_.per_node;
  const DeepEpInternodePlan::Stream& st = inter_.stream(g, r, c);
  const int64_t K = cfg_.c.rdma_chunk, first = x.k * K, count = std::min(K, st.size() - first);
  const uint64_t tb = cfg_.combine_token_bytes;
  switch (x.stage) {
    case 0:
      if (first >= st.size()) return gpu::Step::done();
      x.stage = 1;
      return gpu::Step::wait(sig_[static_cast<size_t>(g)].c_rdma_tail[static_cast<size_t>(c * R + r)],
                             (first + count) * static_cast<int64_t>(tb), gpu::WaitMode::Poll);
    case 1: {
      x.stage = 2;
      // Read each node's reduced token; each token's output row is written once, charged to
      // the group of its lowest node.
      const int64_t begin = cluster_.workload().tokens().begin(g);
      uint64_t writes = 0;
      for (int64_t t = first; t < first + count; ++t) {
        const int32_t low = plan_.lowest_rank[g][static_cast<size_t>(st.token[static_cast<size_t>(t)] - begin)];
        writes += inter_.node(low) == r ? 1 : 0;
      }
      return gpu::Step::memory(static_cast<uint64_t>(count) * tb + writes * cfg_.row_bytes);
    }
    case 2:
      if (hooks_.combine_token) {
        for (int64_t t = first; t < first + count; ++t) {
          for (int l = 0; l < L; ++l) {
            const int32_t idx = st.at(t, l, L);
            if (idx >= 0) hooks_.combine_token(g, c, inter_.gpu(r, l), idx);
          }
        }
      }
      ++x.k;
      x.stage = 0;
      {
        const int relay = inter_.gpu(r, inter_.local(g));
        head_amo(g, relay, sig_[static_cast<size_t>(relay)].c_rdma_head[static_cast<size_t>(c * R + inter_.node(g))]);
      }
      return gpu::Step::compute(Time::zero());
    default:
      throw std::logic_error("DeepEP RDMA receiver: bad stage");
  }
}

}  // namespace moehub
