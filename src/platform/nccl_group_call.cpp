#include "platform/nccl_group_call.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "gpu/gpu.h"

namespace moehub {

NcclGroupCall::NcclGroupCall(Cluster& cluster, std::string name, const PerPair<uint64_t>& bytes, NcclKernelShape shape,
                             int priority)
    : cluster_(cluster), name_(std::move(name)), shape_(shape), priority_(priority) {
  const int n = cluster.gpus();
  if (bytes.gpus() != n) throw std::logic_error("NcclGroupCall: matrix is not gpus x gpus");
  ranks_.resize(n);
  pair_of_ = PerPair<int>(n, -1);
  deltas_ = nccl_p2p_deltas(n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const uint64_t b = bytes(s, d);
      if (b == 0) continue;  // NCCL skips zero-size sends and receives
      pair_of_(s, d) = static_cast<int>(pairs_.size());
      pairs_.push_back(Pair{s, d, b, false, nullptr});
      ++ranks_[s].pending;
      if (d != s) ++ranks_[d].pending;
    }
  }
  for (int g = 0; g < n; ++g) {
    if (participates(g)) ranks_[g].done_signal = cluster.gpu(g).create_signal(name_ + " done");
  }
}

void NcclGroupCall::set_hooks(PairHook on_start, PairHook on_delivered) {
  on_start_ = std::move(on_start);
  on_delivered_ = std::move(on_delivered);
}

bool NcclGroupCall::participates(int g) const { return ranks_.at(g).pending > 0; }

gpu::KernelSpec nccl_kernel(std::string name, NcclKernelShape shape, std::function<void()> on_up, gpu::SignalId done) {
  gpu::KernelSpec spec;
  spec.name = std::move(name);
  spec.blocks = 1;
  spec.shape.threads = shape.threads;
  spec.program = std::make_shared<gpu::FunctionProgram>(
      [on_up = std::move(on_up), done, up = false](gpu::BlockState& b) mutable {
        if (b.step > 0) return gpu::Step::done();
        // The first step is fetched as the CTA is placed on an SM: the rank's side is up.
        if (!up) {
          up = true;
          on_up();
        }
        return gpu::Step::wait(done, 1, gpu::WaitMode::Poll);
      });
  return spec;
}

void NcclGroupCall::launch(int g, gpu::Stream& stream, Callback on_done) {
  if (!participates(g)) return;
  gpu::KernelSpec spec = nccl_kernel(name_, shape_, [this, g] { became_resident(g); }, ranks_[g].done_signal);
  spec.on_done = [this, g, on_done = std::move(on_done)]() mutable {
    ranks_[g].done = cluster_.sim().now();
    if (on_done) on_done();
  };
  cluster_.launch(g, stream, Activity::Communication, std::move(spec));
}

void NcclGroupCall::became_resident(int g) {
  Rank& r = ranks_[g];
  if (r.resident) return;
  r.resident = cluster_.sim().now();
  // NCCL's point-to-point schedule: in round i the rank sends to g + delta_i and receives from
  // g - delta_i (delta_0 = 0: the self copy). A pair moves once both of its ranks are up.
  const int n = cluster_.gpus();
  for (const int delta : deltas_) {
    start_if_ready(g, (g + delta) % n);
    start_if_ready((g - delta + n) % n, g);
  }
}

void NcclGroupCall::start_if_ready(int src, int dst) {
  const int i = pair_of_(src, dst);
  if (i < 0) return;
  Pair& p = pairs_[static_cast<size_t>(i)];
  if (!p.started && ranks_[src].resident && ranks_[dst].resident) start_pair(p);
}

void NcclGroupCall::start_pair(Pair& p) {
  p.started = true;
  if (on_start_) on_start_(p.src, p.dst);
  if (p.src == p.dst) {
    // NCCL's self send/recv: the CTA copies the rows inside the GPU (read + write).
    cluster_.gpu(p.src).memory_write(2 * p.bytes, [this, &p] { pair_delivered(p); });
    return;
  }
  p.transfer = std::make_unique<AllToAll>(cluster_.network(), cluster_.sim(), cluster_.nccl());
  p.transfer->start_pair(p.src, p.dst, p.bytes, priority_, [this, &p] { pair_delivered(p); });
}

void NcclGroupCall::pair_delivered(Pair& p) {
  if (on_delivered_) on_delivered_(p.src, p.dst);
  rank_progress(p.src);
  if (p.dst != p.src) rank_progress(p.dst);
}

void NcclGroupCall::rank_progress(int g) {
  Rank& r = ranks_[g];
  if (r.pending <= 0) throw std::logic_error(fmt::format("{}: rank {} finished more transfers than it has", name_, g));
  if (--r.pending == 0) cluster_.gpu(g).signal_set(r.done_signal, 1);
}

}  // namespace moehub
