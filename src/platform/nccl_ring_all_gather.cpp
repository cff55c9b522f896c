#include "platform/nccl_ring_all_gather.h"

#include <stdexcept>

#include "net/collectives.h"

namespace moehub {

RingAllGather::RingAllGather(Cluster& cluster, uint64_t block_bytes, std::function<void(int)> on_rank)
    : cluster_(cluster),
      n_(cluster.gpus()),
      block_bytes_(block_bytes),
      on_rank_(std::move(on_rank)),
      joined_(n_, 0),
      sent_(n_, 0),
      sends_landed_(n_, 0),
      received_(n_, 0),
      rank_done_(n_, 0) {}

void RingAllGather::join(int r) {
  if (joined_.at(r)) throw std::logic_error("RingAllGather: rank joined twice");
  joined_[r] = 1;
  try_send(r);
  maybe_rank_done(r);
}

void RingAllGather::try_send(int r) {
  // Step s forwards the block received in step s - 1 (step 0: the rank's own block).
  while (joined_[r] && sent_[r] < n_ - 1 && sent_[r] <= received_[r]) {
    ++sent_[r];
    const int next = (r + 1) % n_;
    auto landed = [this, r, next] {
      ++sends_landed_[r];
      ++received_[next];
      try_send(next);
      maybe_rank_done(r);
      maybe_rank_done(next);
    };
    // Across nodes NCCL's ring enters and leaves a node through the same rail's NIC; with PXN
    // the block first crosses NVLink to the sender node's GPU on the receiver's rail.
    const int relay = nccl_pxn_relay(cluster_.network().config(), cluster_.nccl(), r, next);
    if (relay == r) {
      cluster_.network().transfer(r, next, block_bytes_, 0, std::move(landed));
      continue;
    }
    cluster_.network().transfer(r, relay, block_bytes_, 0, [this, relay, next, landed = std::move(landed)]() mutable {
      cluster_.network().transfer(relay, next, block_bytes_, 0, std::move(landed));
    });
  }
}

void RingAllGather::maybe_rank_done(int r) {
  if (rank_done_[r] || !joined_[r] || received_[r] < n_ - 1 || sends_landed_[r] < n_ - 1) return;
  rank_done_[r] = 1;
  on_rank_(r);
}

}  // namespace moehub
