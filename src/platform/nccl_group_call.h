#pragma once
// One NCCL grouped point-to-point call (ncclGroupStart; ncclSend/ncclRecv per peer;
// ncclGroupEnd) made by every rank that takes part, as a kernel on each rank's stream
// (docs/research/systems.md 7.1, 7.3): the kernel is resident on the GPU and spins on its
// flags (a poll-mode wait: it holds an SM slot and issues flag loads) until every send and
// receive of that rank is done. Simplification: one CTA stands for the kernel's channel CTAs
// (docs/systems.md, "NCCL kernels"). A (src, dst) transfer starts once both ranks'
// kernels are resident and moves through the fabric with NCCL's chunked FIFO protocol
// (net/collectives.h AllToAll); a rank starts its pairs in NCCL's peer order (nccl_p2p_deltas).
// The self send/recv is a local copy through HBM. Zero-size sends and receives are skipped; a
// rank with nothing to move launches no kernel. Every system's NCCL all-to-all is this call.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "gpu/stream.h"
#include "net/collectives.h"
#include "platform/cluster.h"

namespace moehub {

// The NCCL kernel's CTA.
struct NcclKernelShape {
  uint32_t threads = 640;  // NCCL_MAX_NTHREADS (research 7.3)
};

// An NCCL kernel as every collective here models it: one CTA of `shape` that calls `on_up`
// once it is placed on an SM (the rank's side of the collective starts moving data) and spins
// on `done` (a signal of its GPU; a poll-mode wait) until it reaches 1.
gpu::KernelSpec nccl_kernel(std::string name, NcclKernelShape shape, std::function<void()> on_up, gpu::SignalId done);

class NcclGroupCall {
 public:
  using PairHook = std::function<void(int src, int dst)>;

  // bytes(src, dst): what rank src sends to rank dst in this call (src == dst: self copy).
  NcclGroupCall(Cluster& cluster, std::string name, const PerPair<uint64_t>& bytes, NcclKernelShape shape,
                int priority = 0);
  NcclGroupCall(const NcclGroupCall&) = delete;
  NcclGroupCall& operator=(const NcclGroupCall&) = delete;

  // Functional hooks: `on_start` when a transfer begins (the sender's rows are read then),
  // `on_delivered` when its last byte is in the receiver's memory.
  void set_hooks(PairHook on_start, PairHook on_delivered);

  // Rank g sends or receives something in this call.
  bool participates(int g) const;
  // Enqueues rank g's NCCL kernel on `stream` through g's host (logged as Communication);
  // `on_done` runs when the kernel ends. Returns nothing to wait on if g does not participate.
  void launch(int g, gpu::Stream& stream, Callback on_done = nullptr);

  // When rank g's kernel had its first CTA resident / ended (unset until then).
  std::optional<Time> resident_at(int g) const { return ranks_.at(g).resident; }
  std::optional<Time> done_at(int g) const { return ranks_.at(g).done; }
  const std::string& name() const { return name_; }

 private:
  struct Rank {
    gpu::SignalId done_signal = 0;
    int pending = 0;  // transfers (sends, receives; the self copy once) not yet delivered
    std::optional<Time> resident;
    std::optional<Time> done;
  };
  struct Pair {
    int src = 0;
    int dst = 0;
    uint64_t bytes = 0;
    bool started = false;
    std::unique_ptr<AllToAll> transfer;
  };

  void index_visits(int n);
  void became_resident(int g);
  void start_if_ready(uint32_t pair);
  void start_pair(Pair& p);
  void pair_delivered(Pair& p);
  void rank_progress(int g);

  Cluster& cluster_;
  std::string name_;
  NcclKernelShape shape_;
  int priority_;
  PerGpu<Rank> ranks_;
  std::vector<Pair> pairs_;
  // Per rank, its pairs (indices into pairs_) in the order NCCL's schedule visits them:
  // visits_[visit_first_[g] .. visit_first_[g + 1]). Sparse: FasterMoE builds 2 x steps x
  // local experts calls of a few pairs each: 512 tables of GPUs x GPUs, 2 GB at 1024 GPUs.
  std::vector<uint32_t> visit_first_;
  std::vector<uint32_t> visits_;
  PairHook on_start_, on_delivered_;
};

}  // namespace moehub
