#include "systems/nccl_rank_collectives.h"

#include <stdexcept>

namespace moehub {

PairwiseAllToAll::PairwiseAllToAll(Cluster& cluster, std::vector<std::vector<uint64_t>> bytes,
                                   std::function<void(int, int)> on_pair, std::function<void(int)> on_rank)
    : cluster_(cluster),
      n_(cluster.gpus()),
      bytes_(std::move(bytes)),
      on_pair_(std::move(on_pair)),
      on_rank_(std::move(on_rank)),
      joined_(static_cast<size_t>(n_), 0),
      started_(static_cast<size_t>(n_ * n_), 0),
      pending_(static_cast<size_t>(n_), 0),
      rank_done_(static_cast<size_t>(n_), 0) {
  pairs_.resize(static_cast<size_t>(n_ * n_));
  for (int s = 0; s < n_; ++s) {
    for (int d = 0; d < n_; ++d) {
      if (bytes_.at(static_cast<size_t>(s)).at(static_cast<size_t>(d)) == 0) continue;
      ++pending_[static_cast<size_t>(s)];
      if (d != s) ++pending_[static_cast<size_t>(d)];
    }
  }
}

PairwiseAllToAll::~PairwiseAllToAll() = default;

void PairwiseAllToAll::join(int r) {
  if (joined_.at(static_cast<size_t>(r))) throw std::logic_error("PairwiseAllToAll: rank joined twice");
  joined_[static_cast<size_t>(r)] = 1;
  for (int delta : nccl_p2p_deltas(n_)) {
    const int dst = (r + delta) % n_;
    const int src = (r - delta + n_) % n_;
    if (joined_[static_cast<size_t>(dst)]) start_pair(r, dst);
    if (joined_[static_cast<size_t>(src)]) start_pair(src, r);
  }
  maybe_rank_done(r);
}

void PairwiseAllToAll::start_pair(int s, int d) {
  const size_t p = static_cast<size_t>(s * n_ + d);
  const uint64_t bytes = bytes_[static_cast<size_t>(s)][static_cast<size_t>(d)];
  if (started_[p] || bytes == 0) return;
  started_[p] = 1;
  if (s == d) {
    // NCCL's self send/recv: a local copy, reading and writing every byte.
    cluster_.gpu(s).memory_write(2 * bytes, [this, s] { pair_done(s, s); });
    return;
  }
  std::vector<std::vector<uint64_t>> m(static_cast<size_t>(n_), std::vector<uint64_t>(static_cast<size_t>(n_), 0));
  m[static_cast<size_t>(s)][static_cast<size_t>(d)] = bytes;
  pairs_[p] = std::make_unique<AllToAll>(cluster_.network(), cluster_.sim(), cluster_.nccl());
  pairs_[p]->start(std::move(m), 0, [this, s, d] { pair_done(s, d); });
}

void PairwiseAllToAll::pair_done(int s, int d) {
  if (on_pair_) on_pair_(s, d);
  --pending_[static_cast<size_t>(s)];
  if (d != s) --pending_[static_cast<size_t>(d)];
  maybe_rank_done(s);
  if (d != s) maybe_rank_done(d);
}

void PairwiseAllToAll::maybe_rank_done(int r) {
  const size_t i = static_cast<size_t>(r);
  if (rank_done_[i] || !joined_[i] || pending_[i] > 0) return;
  rank_done_[i] = 1;
  on_rank_(r);
}

RingAllGather::RingAllGather(Cluster& cluster, uint64_t block_bytes, std::function<void(int)> on_rank)
    : cluster_(cluster),
      n_(cluster.gpus()),
      block_bytes_(block_bytes),
      on_rank_(std::move(on_rank)),
      joined_(static_cast<size_t>(n_), 0),
      sent_(static_cast<size_t>(n_), 0),
      sends_landed_(static_cast<size_t>(n_), 0),
      received_(static_cast<size_t>(n_), 0),
      rank_done_(static_cast<size_t>(n_), 0) {}

void RingAllGather::join(int r) {
  if (joined_.at(static_cast<size_t>(r))) throw std::logic_error("RingAllGather: rank joined twice");
  joined_[static_cast<size_t>(r)] = 1;
  try_send(r);
  maybe_rank_done(r);
}

void RingAllGather::try_send(int r) {
  const size_t i = static_cast<size_t>(r);
  // Step s forwards the block received in step s - 1 (step 0: the rank's own block).
  while (joined_[i] && sent_[i] < n_ - 1 && sent_[i] <= received_[i]) {
    ++sent_[i];
    const int next = (r + 1) % n_;
    cluster_.network().transfer(r, next, block_bytes_, 0, [this, r, next] {
      ++sends_landed_[static_cast<size_t>(r)];
      ++received_[static_cast<size_t>(next)];
      try_send(next);
      maybe_rank_done(r);
      maybe_rank_done(next);
    });
  }
}

void RingAllGather::maybe_rank_done(int r) {
  const size_t i = static_cast<size_t>(r);
  if (rank_done_[i] || !joined_[i] || received_[i] < n_ - 1 || sends_landed_[i] < n_ - 1) return;
  rank_done_[i] = 1;
  on_rank_(r);
}

gpu::KernelSpec nccl_kernel(Cluster& cluster, std::string name, std::function<void()> join, gpu::SignalId done_signal) {
  gpu::KernelSpec spec;
  spec.name = std::move(name);
  spec.blocks = 1;
  spec.shape.threads = 640;  // NCCL_MAX_NTHREADS (docs/research/systems.md 7.3)
  Simulator* sim = &cluster.sim();
  spec.program = std::make_shared<gpu::FunctionProgram>(
      [sim, join = std::move(join), done_signal, joined = false](gpu::BlockState& b) mutable {
        if (b.step > 0) return gpu::Step::done();
        if (!joined) {
          // The block's first step is fetched when the kernel starts: that is when this rank's
          // NCCL kernel begins to move data.
          joined = true;
          sim->schedule_in(Time::zero(), [join] { join(); });
        }
        return gpu::Step::wait(done_signal, 1, gpu::WaitMode::Hardware);
      });
  return spec;
}

}  // namespace moehub
