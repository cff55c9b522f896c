#include "platform/nccl_group_call.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "gpu/gpu.h"

namespace moehub {

NcclGroupCall::NcclGroupCall(Cluster& cluster, std::string name, const PerPair<uint64_t>& bytes, NcclKernelShape shape,
                             int priority)
    : cluster_(cluster), name_(std::move(name)), shape_(shape), priority_(priority) {
  const int n = cluster.gpus();
  if (bytes.gpus() != n) throw std::logic_error("NcclGroupCall: matrix is not gpus x gpus");
  ranks_.resize(n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const uint64_t b = bytes(s, d);
      if (b == 0) continue;  // NCCL skips zero-size sends and receives
      pairs_.push_back(Pair{s, d, b, false, nullptr});
      ++ranks_[s].pending;
      if (d != s) ++ranks_[d].pending;
    }
  }
  index_visits(n);
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

// NCCL's point-to-point schedule: in round i rank g sends to g + delta_i and receives from
// g - delta_i (delta_0 = 0: the self copy), so each rank visits its pairs in the order of their
// delta (dst - src mod n) in the schedule, its send before its receive; a pair whose delta the
// schedule lacks is never visited. Sorted once here, per rank.
void NcclGroupCall::index_visits(int n) {
  const std::vector<int> deltas = nccl_p2p_deltas(n);
  std::vector<int64_t> round(static_cast<size_t>(n), -1);
  for (size_t i = deltas.size(); i-- > 0;) round[static_cast<size_t>(deltas[i])] = static_cast<int64_t>(i);  // first round
  struct Visit {
    int rank;
    int64_t round;
    int recv;
    uint32_t pair;
  };
  std::vector<Visit> v;
  for (uint32_t i = 0; i < pairs_.size(); ++i) {
    const Pair& p = pairs_[i];
    const int64_t r = round[static_cast<size_t>(((p.dst - p.src) % n + n) % n)];
    if (r < 0) continue;
    v.push_back(Visit{p.src, r, 0, i});
    if (p.dst != p.src) v.push_back(Visit{p.dst, r, 1, i});
  }
  std::sort(v.begin(), v.end(), [](const Visit& a, const Visit& b) {
    return std::tie(a.rank, a.round, a.recv) < std::tie(b.rank, b.round, b.recv);
  });
  visit_first_.assign(static_cast<size_t>(n) + 1, 0);
  for (const Visit& x : v) ++visit_first_[static_cast<size_t>(x.rank) + 1];
  for (int g = 0; g < n; ++g) visit_first_[static_cast<size_t>(g) + 1] += visit_first_[static_cast<size_t>(g)];
  visits_.reserve(v.size());
  for (const Visit& x : v) visits_.push_back(x.pair);
}

void NcclGroupCall::became_resident(int g) {
  Rank& r = ranks_[g];
  if (r.resident) return;
  r.resident = cluster_.sim().now();
  // A pair moves once both of its ranks are up.
  for (uint32_t k = visit_first_[static_cast<size_t>(g)]; k < visit_first_[static_cast<size_t>(g) + 1]; ++k) start_if_ready(visits_[k]);
}

void NcclGroupCall::start_if_ready(uint32_t pair) {
  Pair& p = pairs_[pair];
  if (!p.started && ranks_[p.src].resident && ranks_[p.dst].resident) start_pair(p);
}

void NcclGroupCall::start_pair(Pair& p) {
  p.started = true;
  if (on_start_) on_start_(p.src, p.dst);
  if (p.src == p.dst) {
    // NCCL's self send/recv: the CTA copies the rows inside the GPU (read + write).
    cluster_.gpu(p.src).memory_write(2 * p.bytes, [this, &p] { pair_delivered(p); });
    return;
  }
  p.transfer = std::make_unique<AllToAll>(cluster_.network(), cluster_.sim(), cluster_.nccl(), &cluster_.nccl_proxies());
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
