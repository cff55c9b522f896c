#pragma once
// Pieces the fine-grained overlap systems (comet, ccfuser) share: a collective issued as a
// kernel on every GPU's stream (an NCCL collective or an NVSHMEM barrier_all_on_stream), and a
// small host-to-device copy of a plan issued by the host.

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "net/collectives.h"
#include "platform/cluster.h"

namespace moehub {

// One block per GPU. A GPU's block becomes resident, optionally polls a local signal first
// (`before`: e.g. the barrier's quiet, "every byte sent to me has landed"), then arrives; when
// every GPU has arrived the transfers `bytes(src, dst)` start as an NCCL-style all-to-all, and
// each block polls its completion flag (gpu.poll_*), as NCCL's and NVSHMEM's kernels spin on
// flags. An all-gather of counts is the all-to-all that sends the same bytes to every peer; a
// barrier sends one flag-sized message to every peer. Completion is global (the all-to-all's
// last byte), not per GPU: a simplification for these small messages.
class StreamCollective {
 public:
  StreamCollective(Cluster& cluster, std::string name, PerPair<uint64_t> bytes);
  // GPU g's kernel; `before_signal`/`before_threshold`: an optional local wait before arriving.
  gpu::KernelSpec kernel(int g, gpu::BlockShape shape, std::optional<std::pair<gpu::SignalId, int64_t>> before = {});
  // Bytes every GPU sends every other GPU (all-gather or barrier).
  static PerPair<uint64_t> to_every_peer(int gpus, uint64_t bytes);

 private:
  void arrive();

  Cluster& cluster_;
  std::string name_;
  PerPair<uint64_t> bytes_;
  PerGpu<gpu::SignalId> done_;
  std::unique_ptr<AllToAll> all_to_all_;
  int arrived_ = 0;
};

// cudaMemcpyAsync(H2D) of a small plan: the host's issue cost, then a copy of
// host.d2h_latency + bytes / host.d2h_bandwidth on the stream (PCIe is symmetric: the D2H
// figures stand for H2D; assumption, docs/systems/comet.md).
void host_to_device_copy(Cluster& cluster, int g, gpu::Stream& stream, std::string label, uint64_t bytes);

// run.memory_budget's bound on the flow messages of a system built from these pieces
// (SystemEntry::flow_messages_bound). Its remote reads (RemoteMemory) and stores (the GPU's store
// port) ask each message's own path's window, so at most SendWindows::most_outstanding of them
// are out at once; and no more than the system sends in the whole layer, `layer_messages` (at
// flow fidelity a store or a read's request or response is one message of up to 4 GiB,
// FlowNetwork::message_limit): the smaller of the two. Its `collectives` StreamCollectives are
// NCCL all-to-alls over every ordered pair carrying `pair_bytes` per pair in all of them
// (nccl_messages_bound).
uint64_t overlap_flow_messages_bound(const Config& c, int collectives, long double pair_bytes, long double layer_messages);
// What its `collectives` StreamCollectives hold for the system's life: each keeps an AllToAll
// over every ordered pair of GPUs (a connection per pair, its slots' fence flags) and the pair
// byte matrix, counted at kNcclPairBytes a pair (measured for a group call's pair, whose own
// AllToAll object a StreamCollective's pairs share, so an upper bound).
uint64_t overlap_state_bytes(const Config& c, int collectives);

}  // namespace moehub
