#pragma once
// DeepEP V1's internode normal dispatch and combine kernels (deepseek-ai/DeepEP 2be0d4f8
// csrc/kernels/internode.cu) as thread-block programs, for runs whose GPUs span nodes
// (net.gpus_per_node). num_sms CTAs, two per channel; each CTA's warps are split by role, and
// each role's warp group toward one peer is a block here (as in the intranode model), all of a
// CTA's groups on its SM. docs/systems/deepep.md "Internode" says what each role does.
//
// Dispatch (forwarder CTAs even, internode.cu:478-498):
//  - RDMA sender (odd CTA, one group per destination node r): per chunk of `d.rdma_chunk`
//    tokens of its stream to node r, waits for room in the relay's RDMA ring, loads the rows
//    and writes them with their metadata into the send buffer, then one RDMA put of the chunk
//    and the tail atomic to the relay (the GPU of its own local rank on node r) through the
//    NIC (Network::transfer); toward its own node it writes the relay's ring directly.
//  - forwarder (even CTA, one group per destination local rank l): takes the RDMA chunks in
//    the plan's order, waits for each chunk's tail, and stores the chunk's tokens for l into
//    l's NVLink ring (`d.nvl_ring` slots, `d.nvl_chunk` tokens per step); when every forwarder
//    of the channel has passed a chunk, the coordinator returns the RDMA head to the source.
//  - NVLink receiver (odd CTA, one group per forwarding local rank): copies its ring into
//    recv_x in units of `d.nvl_chunk` tokens and stores the head back.
// Combine (forwarder CTAs odd, internode.cu:1719-1747): NVLink senders (even CTA, one group per
// relay local rank, a lane per source node) push each received token's expert output into the
// relay's ring for that source node (`c.nvl_ring` / R slots); forwarders (odd CTA, one group per
// source node) reduce a chunk of `c.rdma_chunk` tokens over the node's GPUs, return the NVLink
// heads and put the chunk to the source; RDMA receivers (even CTA, one group per relay node)
// reduce the nodes' contributions into the output and return the RDMA head.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "config/param_table.h"
#include "gpu/kernel.h"
#include "platform/cluster.h"
#include "systems/deepep/deepep_internode_plan.h"

namespace moehub {

struct InternodeRing {
  int64_t nvl_chunk = 0, nvl_ring = 0, rdma_chunk = 0, rdma_ring = 0;  // tokens
};

// systems.deepep.internode_* (configs/defaults.toml cites each).
struct DeepEpInternodeParams {
  uint32_t dispatch_sender_warps = 0, combine_forwarder_warps = 0;
  InternodeRing d, c;
  static ParamTable<DeepEpInternodeParams> table();
  static DeepEpInternodeParams from(const Config& c);
};

struct InternodeKernelConfig {
  uint32_t num_sms = 20;
  uint32_t dispatch_threads = 512, combine_threads = 800;  // per CTA
  InternodeRing d, c;
  uint64_t dispatch_token_bytes = 0;  // row, source meta, top-k indices and weights
  uint64_t combine_token_bytes = 0;   // row, source meta, top-k weights
  uint64_t row_bytes = 0;
};

class DeepEpInternode {
 public:
  struct Hooks {
    // Dispatch: GPU g copied token `index` of plan.send(src, g)[c] into recv_x.
    std::function<void(int g, int c, int src, int64_t index)> dispatch_token;
    // Combine: GPU g (the token's owner) reduced the expert output of token `index` of
    // plan.send(g, expert_gpu)[c] into its output.
    std::function<void(int g, int c, int expert_gpu, int64_t index)> combine_token;
  };

  // Creates the kernels' signals on every GPU.
  DeepEpInternode(Cluster& cluster, const DeepEpPlan& plan, const DeepEpInternodePlan& inter, InternodeKernelConfig config,
                  Hooks hooks);
  ~DeepEpInternode();

  // From the parameters for `nodes` nodes of `per_node` GPUs: DeepEP rounds the RDMA ring up
  // to whole send chunks (csrc/config.hpp:46) and sizes the CTAs by its warp roles.
  static InternodeKernelConfig config(const DeepEpInternodeParams& p, uint32_t num_sms, int nodes);

  gpu::KernelSpec dispatch(int g);
  gpu::KernelSpec combine(int g);

  // Per-CTA warp groups (blocks per SM) of either kernel.
  int groups() const { return inter_.nodes + inter_.per_node; }

  struct Group;  // one warp group's program state

 private:
  struct Signals;
  gpu::KernelSpec kernel(int g, const char* name, uint32_t threads, bool dispatch);
  gpu::Step rdma_sender(int g, Group& x);
  gpu::Step forwarder(int g, Group& x);
  gpu::Step nvl_receiver(int g, Group& x);
  gpu::Step nvl_sender(int g, Group& x);
  gpu::Step combine_forwarder(int g, Group& x);
  gpu::Step rdma_receiver(int g, Group& x);
  // An RDMA put of `bytes` and its tail atomic from src to dst (one queue pair: the atomic
  // lands after the data); dst's `tail` grows by `bytes` when they are in its memory. To itself
  // (src == dst) only the tail moves. The step the issuing warp group takes next.
  gpu::Step put(int src, int dst, uint64_t bytes, gpu::SignalId tail);
  // A head atomic (8 bytes) from src into dst's `head`: over RDMA, or local when src == dst.
  void head_amo(int src, int dst, gpu::SignalId head);
  void chunk_forwarded(int q, int c, size_t chunk);

  Cluster& cluster_;
  const DeepEpPlan& plan_;
  const DeepEpInternodePlan& inter_;
  InternodeKernelConfig cfg_;
  Hooks hooks_;
  std::vector<Signals> sig_;
  std::vector<std::vector<int>> forwarded_;  // [q * channels + c][chunk]: forwarders done with it
};

}  // namespace moehub
