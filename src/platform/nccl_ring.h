#pragma once
// NCCL's ring broadcast and ring reduce, several at once in one group (one chain per root), as
// each rank's kernel runs them: the TP collectives of Megatron's EP+TP dispatcher.
//
// Why chains: PyTorch runs an uneven all_gather / reduce_scatter as a coalesced group of one
// ncclBroadcast / ncclReduce per rank as root (c10d ProcessGroupNCCL, the !same_size branch),
// and an even one as ncclAllGather / ncclReduceScatter, whose ring moves block r from rank r
// around the ring in n - 1 steps with a reduction at every step of the reduce-scatter: the same
// chain per root (NVIDIA/nccl 5067397c src/device/all_gather.h:51-74,
// reduce_scatter.h:39-54). The only difference modelled is the slice: 1 FIFO step for
// broadcast and reduce, 2 for all-gather and reduce-scatter (src/include/collectives.h:21-34).
//
// A chain visits the ring's ranks in order, each forwarding to its ring neighbour:
//  - broadcast (root at stage 0, broadcast.h:44-54): stage 0 copies input to output and sends
//    (directCopySend), middle stages receive, copy out and send (directRecvCopyDirectSend),
//    the last receives (directRecv);
//  - reduce (root last, reduce.h:34-51): the root's next rank sends its input (send), middle
//    stages add their input to what they received and send (recvReduceSend), the root adds and
//    writes the result (recvReduceCopy).
// Each rank is a separate process, so NCCL's p2p transport has no direct pointers
// (src/transport/p2p.cc:330-331 P2P_SAME_PID) and writes into the receiver's FIFO on Hopper
// (p2p.cc:335-336: reads only on Ampere). A stage's pass over one slice therefore costs its
// GPU's HBM: broadcast 2 x slice at every stage (read input or FIFO, write output); reduce 1 x
// (first: read input), 2 x (middle: FIFO + input) or 3 x (root: FIFO + input, write output).
// The pass comes first, then the slice crosses to the next rank (one Network transfer); one
// pass at a time per stage (the channel's CTA works slice by slice), and at most
// `steps / slice_steps` slices in a connection's FIFO: a slot is free again once the receiving
// stage has made its pass over the slice and its head update has crossed back. A sender may
// fill a receiver's free slots before the receiver's kernel runs (the FIFO exists from
// connection setup); a stage makes passes only while its rank's kernel is resident.
// Across nodes a hop is NCCL's net transport through the proxy threads (net/nccl_net_hop.h,
// one RDMA write per slice, NCCL_STEPS / sliceSteps slices in flight: net.cc:1347, 1567): the
// pass writes the slice into the sender's own FIFO (or, with PXN, crosses NVLink to the relay's),
// the sender's slot is free when the proxy has polled the send, and the receiver's proxy posts
// receives from the receiving rank's kernel start and one more after each pass over a slice.
// Simplifications: one CTA stands for the channels (as platform/nccl_group_call.h); the pass
// and the crossing of one slice are sequential here, pipelined in the real CTA; a pass takes
// its share of the GPU's HBM with no cap for the few SMs NCCL holds: one channel's CTA keeps
// 640 threads x 8 unrolled 16 B loads in flight (src/include/device.h:93, 535-537), about
// 195 GB/s at the 421 ns DRAM latency, so two channels already exceed the ~320 GB/s of passes
// a link-bound (~160 GB/s) reduce needs.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/stream.h"
#include "net/nccl_net_hop.h"
#include "platform/cluster.h"
#include "platform/nccl_group_call.h"

namespace moehub {

enum class RingOp { Broadcast, Reduce };

struct RingSpec {
  std::vector<std::vector<int>> rings;  // each communicator's GPUs in ring order (disjoint)
  PerGpu<uint64_t> block;               // bytes of the chain whose root is that GPU (0: none)
  RingOp op = RingOp::Broadcast;
  // FIFO steps (nccl.chunk_bytes each) per slice, per ring (empty: 1 for every ring).
  std::vector<uint32_t> slice_steps;
};

class NcclRing {
 public:
  using PairHook = std::function<void(int root, int rank)>;

  NcclRing(Cluster& cluster, std::string name, RingSpec spec, NcclKernelShape shape);
  NcclRing(const NcclRing&) = delete;
  NcclRing& operator=(const NcclRing&) = delete;

  // `on_complete(root, rank)` when rank's part of root's chain is done (its last pass).
  void set_hooks(PairHook on_complete) { on_complete_ = std::move(on_complete); }
  bool participates(int g) const { return ranks_.at(g).pending > 0; }
  // Enqueues g's NCCL kernel on `stream` (logged as Communication); `on_done` when it ends.
  void launch(int g, gpu::Stream& stream, Callback on_done = nullptr);
  std::optional<Time> resident_at(int g) const { return ranks_.at(g).resident; }
  std::optional<Time> done_at(int g) const { return ranks_.at(g).done; }

 private:
  struct Stage {
    int gpu = 0;
    uint64_t pass_factor = 2;  // HBM bytes per slice byte of this stage's pass
    int passed = 0;            // slices passed (in order)
    int received = 0;          // slices in this stage's FIFO (stage 0: all of them)
    int slots_used = 0;        // slices sent to the next stage and not yet freed
    int landed = 0;            // slices delivered to the next stage
    bool busy = false;
  };
  struct Chain {
    int root = 0;
    uint64_t bytes = 0;
    uint64_t slice_bytes = 0;
    int slots = 1;  // slices a connection's FIFO holds
    int slices = 0;
    std::vector<Stage> stages;
    std::vector<std::unique_ptr<NcclNetHop>> hops;  // per stage: to the next one across nodes
  };
  struct Rank {
    gpu::SignalId done_signal = 0;
    int pending = 0;  // stages of this rank not yet finished
    std::optional<Time> resident;
    std::optional<Time> done;
    std::vector<std::pair<size_t, size_t>> stages;  // (chain, stage)
  };

  void add_chain(const std::vector<int>& ring, size_t root_pos, uint32_t slice_steps);
  void add_hop(size_t chain, size_t stage);  // stage -> stage + 1 across nodes
  void send(size_t chain, size_t stage, int slice);
  uint64_t slice_size(const Chain& c, int i) const;
  void try_pass(size_t chain, size_t stage);
  void passed(size_t chain, size_t stage, int slice);
  void maybe_stage_done(size_t chain, size_t stage);

  Cluster& cluster_;
  std::string name_;
  RingSpec spec_;
  NcclKernelShape shape_;
  Time slot_return_;
  std::vector<Chain> chains_;
  std::vector<std::vector<uint8_t>> stage_done_;
  PerGpu<Rank> ranks_;
  PairHook on_complete_;
};

}  // namespace moehub
