#pragma once
// NCCL's ring all-gather as each rank's kernel sees it (docs/research/systems.md section 7),
// for Megatron's count exchange. A rank takes part from the moment its NCCL kernel starts
// (`join`) and its kernel ends when its own sends and receives are done, so a late or lightly
// loaded rank is not timed by the slowest pair of the whole collective. (All-to-alls are
// platform/nccl_group_call.h.)
//
// RingAllGather: one block per rank; in step i rank r forwards block r - i to rank r + 1, once
// it has joined and holds that block; small blocks land in the receiver's FIFO before its
// kernel runs (initial credits), so only forwarding waits for the receiver's join. Across nodes
// a hop is NCCL's net transport through the proxy threads (net/nccl_net_hop.h), via the PXN
// relay (net/collectives.h nccl_pxn_relay) when PXN is on: its slices wait for the receiver's
// proxy to post receives (from the receiver's join) and a rank's send counts as done when its
// tail is stored (the kernel's last act; the proxies carry on).
//
// A rank joins from its NCCL kernel (`nccl_kernel`, platform/nccl_group_call.h): the kernel
// joins when it is placed and spins on its done flag until the rank's part is done.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/nccl_net_hop.h"
#include "platform/cluster.h"

namespace moehub {

class RingAllGather {
 public:
  RingAllGather(Cluster& cluster, uint64_t block_bytes, std::function<void(int)> on_rank);
  void join(int rank);

 private:
  void try_send(int rank);
  void maybe_rank_done(int rank);
  void make_hop(int rank);  // rank -> rank + 1 across nodes

  Cluster& cluster_;
  int n_;
  uint64_t block_bytes_;
  std::function<void(int)> on_rank_;
  PerGpu<uint8_t> joined_;
  PerGpu<int> sent_, sends_landed_, received_;
  PerGpu<uint8_t> rank_done_;
  uint64_t slices_per_block_ = 1;                 // net hops: slices of one block
  std::vector<std::unique_ptr<NcclNetHop>> hops_;  // per sender: its hop, if it crosses nodes
};

}  // namespace moehub
