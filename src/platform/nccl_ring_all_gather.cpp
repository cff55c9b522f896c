#include "platform/nccl_ring_all_gather.h"

#include <algorithm>
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
      rank_done_(n_, 0) {
  const NetConfig& net = cluster.network().config();
  hops_.resize(static_cast<size_t>(n_));
  if (!net.scale_out() || n_ < 2) return;
  // A block of more than one FIFO step goes as several slices (counts never are: experts x 8 B).
  const uint64_t step = std::max<uint64_t>(1, cluster.nccl().chunk_bytes);
  slices_per_block_ = std::max<uint64_t>(1, (block_bytes_ + step - 1) / step);
  for (int r = 0; r < n_; ++r) {
    if (r / net.gpus_per_node != (r + 1) % n_ / net.gpus_per_node) make_hop(r);
  }
}

// A tiny all-gather runs NCCL's LL protocol: one step per slice, NCCL_STEPS of them in flight
// (src/include/collectives.h:21-22 slices only Simple's steps). Its lines' doubled bytes are not
// modelled, as inside a node (the ring carries the block's bytes).
void RingAllGather::make_hop(int r) {
  const int next = (r + 1) % n_;
  auto hop = std::make_unique<NcclNetHop>(cluster_.network(), cluster_.sim(), cluster_.nccl_proxies(), cluster_.nccl(), r,
                                          next, static_cast<uint64_t>(n_ - 1) * slices_per_block_, cluster_.nccl().steps);
  const uint64_t per = slices_per_block_;
  hop->set_hooks(
      [this, r, per](uint64_t k) {
        if ((k + 1) % per != 0) return;
        ++sends_landed_[r];
        maybe_rank_done(r);
      },
      nullptr,
      [this, r, next, per](uint64_t k) {
        // The count all-gather's copy out of the FIFO is not timed (as inside a node).
        hops_[static_cast<size_t>(r)]->consumed();
        if ((k + 1) % per != 0) return;
        ++received_[next];
        try_send(next);
        maybe_rank_done(next);
      });
  hops_[static_cast<size_t>(r)] = std::move(hop);
}

void RingAllGather::join(int r) {
  if (joined_.at(r)) throw std::logic_error("RingAllGather: rank joined twice");
  joined_[r] = 1;
  // The receiver's proxy posts its first receives once its operation is live.
  if (NcclNetHop* in = hops_[static_cast<size_t>((r + n_ - 1) % n_)].get()) in->open_receiver();
  try_send(r);
  maybe_rank_done(r);
}

void RingAllGather::try_send(int r) {
  // Step s forwards the block received in step s - 1 (step 0: the rank's own block).
  while (joined_[r] && sent_[r] < n_ - 1 && sent_[r] <= received_[r]) {
    ++sent_[r];
    const int next = (r + 1) % n_;
    if (NcclNetHop* hop = hops_[static_cast<size_t>(r)].get()) {
      const uint64_t step = std::max<uint64_t>(1, cluster_.nccl().chunk_bytes);
      for (uint64_t off = 0; off < block_bytes_ || off == 0; off += step) hop->push(std::min(step, block_bytes_ - off));
      continue;
    }
    auto landed = [this, r, next] {
      ++sends_landed_[r];
      ++received_[next];
      try_send(next);
      maybe_rank_done(r);
      maybe_rank_done(next);
    };
    cluster_.network().transfer(r, next, block_bytes_, 0, std::move(landed));
  }
}

void RingAllGather::maybe_rank_done(int r) {
  if (rank_done_[r] || !joined_[r] || received_[r] < n_ - 1 || sends_landed_[r] < n_ - 1) return;
  rank_done_[r] = 1;
  on_rank_(r);
}

}  // namespace moehub
