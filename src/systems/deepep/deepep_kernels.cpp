#include "systems/deepep/deepep_kernels.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace moehub {
namespace {

constexpr uint64_t kOffsetStoreBytes = 8;  // channel_start_offset and channel_end_offset (int32 each)
constexpr uint64_t kHeadStoreBytes = 4;    // an int32 head index
constexpr uint64_t kBarrierStoreBytes = 4; // atomicAdd_system on an int32 barrier flag

// One warp group's program state.
struct Group {
  bool assigned = false;
  bool sender = false;
  int channel = 0;
  int peer = 0;
  int64_t tokens = 0;
  int64_t chunk = 0;  // index of the current chunk
  int stage = 0;
  int64_t stored = 0;  // tokens of the current chunk stored so far
};

class ChannelProgram final : public gpu::BlockProgram {
 public:
  using HeadFn = std::function<gpu::SignalId(int c, int d)>;
  ChannelProgram(int g, int n, const ChannelKernelConfig& cfg, const ChannelCounts& counts, uint32_t grid,
                 std::function<gpu::Step(Group&)> sender, std::function<gpu::Step(Group&)> receiver)
      : g_(g), n_(n), cfg_(cfg), counts_(counts), groups_(grid), per_sm_(cfg.num_sms, 0),
        sender_(std::move(sender)), receiver_(std::move(receiver)) {}

  gpu::Step next(gpu::BlockState& b) override {
    // The first step is fetched before the block has an SM; the role follows from the SM.
    if (b.step == 0) return gpu::Step::compute(Time::zero());
    Group& grp = groups_.at(b.block);
    if (!grp.assigned) assign(grp, b.sm);
    return grp.sender ? sender_(grp) : receiver_(grp);
  }

 private:
  void assign(Group& grp, int32_t sm) {
    if (sm < 0 || static_cast<uint32_t>(sm) >= cfg_.num_sms) throw std::logic_error(cfg_.name + ": block outside its SMs");
    const uint32_t rel = static_cast<uint32_t>(sm);
    grp.assigned = true;
    grp.sender = rel % 2 == 0;  // even CTAs send, odd CTAs receive
    grp.channel = static_cast<int>(rel / 2);
    grp.peer = per_sm_[rel]++;
    if (grp.peer >= n_) throw std::logic_error(cfg_.name + ": more peer groups than peers on one SM");
    grp.tokens = grp.sender ? counts_.at(g_, grp.channel, grp.peer) : counts_.at(grp.peer, grp.channel, g_);
  }

  int g_, n_;
  const ChannelKernelConfig& cfg_;
  const ChannelCounts& counts_;
  std::vector<Group> groups_;
  std::vector<int> per_sm_;
  std::function<gpu::Step(Group&)> sender_, receiver_;
};

}  // namespace

DeepEpChannelKernel::DeepEpChannelKernel(Cluster& cluster, ChannelKernelConfig config, ChannelCounts counts, Hooks hooks)
    : cfg_(std::move(config)), counts_(std::move(counts)), hooks_(std::move(hooks)), n_(cluster.gpus()) {
  if (cfg_.num_sms < 2 || cfg_.num_sms % 2 != 0) throw std::logic_error("DeepEP kernels need an even SM count");
  if (counts_.channels != static_cast<int>(cfg_.num_sms / 2) || counts_.gpus != n_) {
    throw std::logic_error("DeepEP channel counts do not match the kernel shape");
  }
  for (int g = 0; g < n_; ++g) {
    Signals s;
    gpu::Gpu& gp = cluster.gpu(g);
    for (int c = 0; c < counts_.channels; ++c) {
      for (int p = 0; p < n_; ++p) {
        s.meta.push_back(gp.create_signal(cfg_.name + " offsets"));
        s.tail.push_back(gp.create_signal(cfg_.name + " tail"));
        s.head.push_back(gp.create_signal(cfg_.name + " head"));
      }
    }
    sig_.push_back(std::move(s));
  }
}

gpu::KernelSpec DeepEpChannelKernel::kernel(int g) {
  gpu::KernelSpec spec;
  spec.name = cfg_.name;
  spec.persistent = true;
  spec.sms = {0, cfg_.num_sms};
  spec.shape.threads = std::max<uint32_t>(32, cfg_.threads / static_cast<uint32_t>(n_));
  spec.shape.max_blocks_per_sm = static_cast<uint32_t>(n_);
  const uint32_t grid = cfg_.num_sms * static_cast<uint32_t>(n_);
  const int64_t chunk = cfg_.chunk_tokens;
  const int64_t ring = cfg_.ring_tokens;

  auto sender = [this, g, chunk, ring](Group& x) -> gpu::Step {
    const int64_t chunks = (x.tokens + chunk - 1) / chunk;
    for (;;) {
      const int64_t first = x.chunk * chunk;
      const int64_t count = std::min(chunk, x.tokens - first);
      switch (x.stage) {
        case 0:
          x.stage = 1;
          return gpu::Step::store(static_cast<uint32_t>(x.peer), kOffsetStoreBytes, Cluster::signal_tag(meta(x.peer, x.channel, g)));
        case 1: {
          if (x.chunk >= chunks) return gpu::Step::done();
          x.stage = 2;
          // Room in the ring: the receiver must have consumed first + count - ring tokens, i.e.
          // that many of its whole chunks (one head store each).
          const int64_t need = first + count - ring;
          if (need > 0) {
            const int64_t heads = (need + chunk - 1) / chunk;
            return gpu::Step::wait(head(g, x.channel, x.peer), heads * static_cast<int64_t>(kHeadStoreBytes), gpu::WaitMode::Poll);
          }
          break;
        }
        case 2:
          x.stage = 3;
          x.stored = 0;
          return gpu::Step::memory(static_cast<uint64_t>(count) * cfg_.row_bytes);
        case 3:
          if (x.stored < count) {
            ++x.stored;
            return gpu::Step::store(static_cast<uint32_t>(x.peer), cfg_.token_bytes,
                                    Cluster::signal_tag(tail(x.peer, x.channel, g)));
          }
          ++x.chunk;
          x.stage = 1;
          break;
        default:
          throw std::logic_error("DeepEP sender: bad stage");
      }
    }
  };

  auto receiver = [this, g, chunk](Group& x) -> gpu::Step {
    const int64_t chunks = (x.tokens + chunk - 1) / chunk;
    const int64_t first = x.chunk * chunk;
    const int64_t count = std::min(chunk, x.tokens - first);
    switch (x.stage) {
      case 0:
        x.stage = 1;
        return gpu::Step::wait(meta(g, x.channel, x.peer), static_cast<int64_t>(kOffsetStoreBytes), gpu::WaitMode::Poll);
      case 1:
        if (x.chunk >= chunks) return gpu::Step::done();
        x.stage = 2;
        return gpu::Step::wait(tail(g, x.channel, x.peer), (first + count) * static_cast<int64_t>(cfg_.token_bytes),
                               gpu::WaitMode::Poll);
      case 2:
        x.stage = 3;
        return gpu::Step::memory(hooks_.recv_bytes(g, x.channel, x.peer, first, count));
      case 3:
        if (hooks_.on_chunk) hooks_.on_chunk(g, x.channel, x.peer, first, count);
        ++x.chunk;
        x.stage = 1;
        return gpu::Step::store(static_cast<uint32_t>(x.peer), kHeadStoreBytes, Cluster::signal_tag(head(x.peer, x.channel, g)));
      default:
        throw std::logic_error("DeepEP receiver: bad stage");
    }
  };

  spec.program = std::make_shared<ChannelProgram>(g, n_, cfg_, counts_, grid, sender, receiver);
  return spec;
}

gpu::KernelSpec deepep_notify_kernel(Cluster& cluster, int g, const NotifyConfig& cfg,
                                     const PerGpu<gpu::SignalId>& barrier_signal, std::function<void()> tell_host) {
  const int n = cluster.gpus();
  std::vector<gpu::Step> steps;
  std::vector<int> peers = cfg.barrier_peers;
  if (peers.empty()) {
    for (int p = 0; p < n; ++p) {
      if (p != g) peers.push_back(p);
    }
  }
  int rounds = 0;
  auto barrier = [&] {
    ++rounds;
    for (const int p : peers) {
      steps.push_back(gpu::Step::store(static_cast<uint32_t>(p), kBarrierStoreBytes,
                                       Cluster::signal_tag(barrier_signal.at(p))));
    }
    steps.push_back(gpu::Step::wait(barrier_signal.at(g),
                                    rounds * static_cast<int64_t>(peers.size() * kBarrierStoreBytes), gpu::WaitMode::Poll));
  };
  for (int i = 0; i < cfg.barriers_before_counts; ++i) barrier();
  for (int p = 0; p < n && !cfg.count_bytes_to_peer.empty(); ++p) {
    // Its own counts are a local write.
    if (p != g && cfg.count_bytes_to_peer.at(p) > 0) {
      steps.push_back(gpu::Step::store(static_cast<uint32_t>(p), cfg.count_bytes_to_peer.at(p), 0));
    }
  }
  for (int i = 0; i < cfg.barriers_after_counts; ++i) barrier();
  if (cfg.local_bytes) steps.push_back(gpu::Step::memory(cfg.local_bytes));
  const size_t tell_at = steps.size();
  if (cfg.clean_bytes) steps.push_back(gpu::Step::memory(cfg.clean_bytes));
  for (int i = 0; i < cfg.final_barriers; ++i) barrier();

  gpu::KernelSpec spec;
  spec.name = cfg.name;
  spec.blocks = 1 + cfg.extra_blocks;
  spec.shape.threads = cfg.threads;
  Simulator* sim = &cluster.sim();
  const uint64_t extra = cfg.extra_block_bytes;
  spec.program = std::make_shared<gpu::FunctionProgram>(
      [steps = std::move(steps), tell_at, tell = std::move(tell_host), sim, extra](gpu::BlockState& b) mutable {
        if (b.block != 0) return b.step == 0 ? gpu::Step::memory(extra) : gpu::Step::done();
        if (b.step == tell_at && tell) {
          // CTA 0 writes the received-token counters into host-mapped memory here.
          sim->schedule_in(Time::zero(), std::move(tell));
          tell = nullptr;
        }
        return b.step < steps.size() ? steps[b.step] : gpu::Step::done();
      });
  return spec;
}

}  // namespace moehub
