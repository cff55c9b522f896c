#pragma once
// NCCL's ring all-gather as each rank's kernel sees it (docs/research/systems.md section 7),
// for Megatron's count exchange. A rank takes part from the moment its NCCL kernel starts
// (`join`) and its kernel ends when its own sends and receives are done, so a late or lightly
// loaded rank is not timed by the slowest pair of the whole collective. (All-to-alls are
// systems/nccl_group_call.h.)
//
// RingAllGather: one block per rank; in step i rank r forwards block r - i to rank r + 1, once
// it has joined and holds that block; small blocks land in the receiver's FIFO before its
// kernel runs (initial credits), so only forwarding waits for the receiver's join.
//
// `nccl_kernel` is the stream command that joins: a one-CTA kernel that joins the collective
// when it starts and spins on its done flag (a poll-mode wait, as NcclGroupCall's kernel) until
// the rank's part is done.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "systems/cluster.h"

namespace moehub {

class RingAllGather {
 public:
  RingAllGather(Cluster& cluster, uint64_t block_bytes, std::function<void(int)> on_rank);
  void join(int rank);

 private:
  void try_send(int rank);
  void maybe_rank_done(int rank);

  Cluster& cluster_;
  int n_;
  uint64_t block_bytes_;
  std::function<void(int)> on_rank_;
  std::vector<uint8_t> joined_;
  std::vector<int> sent_, sends_landed_, received_;
  std::vector<uint8_t> rank_done_;
};

// A one-block kernel for GPU g that calls `join` when it starts and ends once `done_signal`
// (a signal of GPU g) reaches 1.
gpu::KernelSpec nccl_kernel(Cluster& cluster, std::string name, uint32_t threads, std::function<void()> join,
                            gpu::SignalId done_signal);

}  // namespace moehub
