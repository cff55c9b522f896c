#pragma once
// NCCL collectives as each rank's kernel sees them, for the systems that issue them from their
// compute stream (docs/research/systems.md section 7). A rank takes part from the moment its
// NCCL kernel starts (`join`) and its kernel ends when its own sends and receives are done, so
// a late or lightly loaded rank is not timed by the slowest pair of the whole collective.
//
//  - PairwiseAllToAll: all-to-all-v. The pair (src, dst) moves once both ranks have joined (the
//    receiver's running kernel drains the FIFO and returns its credits), through an AllToAll of
//    that pair alone, so NCCL's chunking, FIFO steps and channels per peer apply as in
//    net/collectives.h; pairs are started in NCCL's quadratic peer order. The self chunk is a
//    local copy through the GPU's memory (read and write).
//  - RingAllGather: NCCL's ring all-gather of one block per rank: in step i rank r forwards
//    block r - i to rank r + 1, once it has joined and holds that block; small blocks land in
//    the receiver's FIFO before its kernel runs (initial credits), so only forwarding waits
//    for the receiver's join.
//
// `nccl_kernel` is the stream command that joins: a one-block kernel that joins the collective
// when it starts and ends when the rank's part is done. Its block waits in hardware mode, so
// the NCCL CTAs' SM residency is not modelled; the systems that use it run nothing else on the
// GPU meanwhile.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "net/collectives.h"
#include "systems/cluster.h"

namespace moehub {

class PairwiseAllToAll {
 public:
  // bytes[src][dst]; on_pair(src, dst) when a pair's data has landed (also the self copy);
  // on_rank(r) when rank r's part is done.
  PairwiseAllToAll(Cluster& cluster, std::vector<std::vector<uint64_t>> bytes,
                   std::function<void(int, int)> on_pair, std::function<void(int)> on_rank);
  PairwiseAllToAll(const PairwiseAllToAll&) = delete;
  PairwiseAllToAll& operator=(const PairwiseAllToAll&) = delete;
  ~PairwiseAllToAll();

  void join(int rank);

 private:
  void start_pair(int src, int dst);
  void pair_done(int src, int dst);
  void maybe_rank_done(int rank);

  Cluster& cluster_;
  int n_;
  std::vector<std::vector<uint64_t>> bytes_;
  std::function<void(int, int)> on_pair_;
  std::function<void(int)> on_rank_;
  std::vector<uint8_t> joined_;
  std::vector<uint8_t> started_;  // per pair
  std::vector<int> pending_;      // per rank: pairs with bytes not yet landed
  std::vector<uint8_t> rank_done_;
  std::vector<std::unique_ptr<AllToAll>> pairs_;
};

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
gpu::KernelSpec nccl_kernel(Cluster& cluster, std::string name, std::function<void()> join, gpu::SignalId done_signal);

}  // namespace moehub
