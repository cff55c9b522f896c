#include "platform/nccl_ring_all_gather.h"

#include <stdexcept>

namespace moehub {

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

}  // namespace moehub
