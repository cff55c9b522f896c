#pragma once
// Collectives the MoE systems use, on the transfer and packet interfaces:
//  - NCCL-style all-to-all(v) (docs/research/systems.md section 7): the quadratic peer order
//    of NCCL's p2p schedule (7.2); each peer's data split over up to `channels_per_peer`
//    connections, fewer for a small share (7.3, nccl_pair_channels); each connection moves
//    512 KiB chunks (steps; 128 KiB once the GPUs span nodes, nccl_step_bytes) through a FIFO
//    of `steps` slots (7.4), so at most `steps` chunks
//    are in flight per connection; the self copy stays off the fabric.
//    Simple over NVLink (p2p write mode, prims_simple.h postPeer/waitPeer) copies a
//    connection's steps in order and signals each op by op: once a step's writes are handed to
//    the network the next step's copy may start; the sender's fence waits until the step's
//    writes are acknowledged, then it stores the step counter (the tail, 8 B) into the
//    receiver's memory, while the next step is being copied; the receiver reads
//    the step once that store has landed and stores its head (8 B) back into the sender's
//    memory, which frees the slot. Both stores are packets of the network like any other.
//    A pair small enough for NCCL's LL protocol sends 16-byte lines of 8 data bytes and a flag:
//    twice its bytes on the wire, in one step (no slot to wait for).
//    Across nodes with PXN (the NCCL default) a pair whose GPUs sit on different rails goes
//    first over NVLink to the sender node's GPU on the receiver's rail, whose NIC sends it on
//    (nccl_pxn_relay). A connection across nodes runs NCCL's net transport: the sender's GPU
//    writes its steps in order into the FIFO (the relay's over NVLink, or its own memory),
//    fences and stores each tail into host memory; the relay's proxy thread (NcclProxies)
//    posts a step's RDMA write once it has seen the tail and the receiver's clear-to-send, and
//    polls its completion, which frees the slot; the receiver's proxy posts `steps` receives
//    ahead (each with a clear-to-send to the sender), polls each arrival, flushes if asked and
//    stores the tail for its GPU, whose head store lets the proxy post the next receive.
//  - one-sided puts issued by a thread block: stores of at most max_payload bytes, complete
//    when every store is acknowledged (put + quiet).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "net/nccl_proxy.h"
#include "net/network.h"
#include "sim/callback.h"
#include "sim/per_gpu.h"
#include "sim/simulator.h"

namespace moehub {

struct NcclConfig {
  uint64_t chunk_bytes = 512 * 1024;
  int steps = 8;
  int channels_per_peer = 4;
  uint64_t ll_threshold_bytes = 16 * 1024;  // LL while a pair's bytes <= channels x this
  bool pxn = false;                         // across nodes: relay through the receiver's rail (PXN)
  uint64_t net_chunk_bytes = 128 * 1024;    // the step size of every pair once the GPUs span nodes
  Time proxy_post_cost;                     // one ibv_post_send or ibv_post_recv on a proxy thread
  Time proxy_poll_cost;                     // one ibv_poll_cq that returns a completion
  bool gdr_flush = false;                   // the receiver's proxy flushes each step (RDMA read)
  static NcclConfig from(const Config& config);
};

// Peer offsets in NCCL's p2p schedule for n ranks: delta_0 = 0, delta_{r+1} = (delta_r + r + 1)
// mod pow2up(n), skipping values >= n. Round r sends to rank + delta_r and receives from
// rank - delta_r. For n = 8: 0 1 3 6 2 7 5 4.
std::vector<int> nccl_p2p_deltas(int n);

// Connections NCCL gives one pair's `bytes` (enqueue.cc:920): a small share runs on fewer
// channels than channels_per_peer: one per chunk/8 bytes, or net chunk/2 once the GPUs span
// nodes (`multi_node`).
int nccl_pair_channels(const NcclConfig& cfg, uint64_t bytes, bool multi_node = false);
// The step (chunk) size of the pair src -> dst carrying `bytes` (init.cc:830-843,
// enqueue.cc:936-943): chunk_bytes in one node; net_chunk_bytes once the GPUs span nodes, and for
// a pair across nodes a quarter of it below one step's bytes, half below eight.
uint64_t nccl_step_bytes(const NcclConfig& cfg, const NetConfig& net, int src, int dst, uint64_t bytes);
// Whether NCCL sends a pair's `bytes` over `channels` connections with LL (enqueue.cc:932).
bool nccl_pair_uses_ll(const NcclConfig& cfg, uint64_t bytes, int channels);

// The GPU through whose NIC NCCL sends src's data to dst (NVIDIA/nccl 5067397c
// src/graph/search.cc:1454-1471, P2P_PXN_LEVEL 2, and transport/net.cc:310, 358: the sender
// uses the NIC of its node's GPU with the receiver's local index, the receiver its own NIC):
// that GPU, or src itself inside a node, on the same rail, or without PXN.
int nccl_pxn_relay(const NetConfig& net, const NcclConfig& cfg, int src, int dst);

// The most chunks one all-to-all (or NCCL group call) over `gpus` GPUs has in flight at once:
// every ordered pair on at most channels_per_peer connections, each with at most `steps` chunks
// out (AllToAll::issue; across nodes a slot is freed only by the send's completion and the
// receiver's proxy posts at most `steps` receives; with PXN a chunk is on one of its two legs
// at a time; clear-to-sends and acks are timed, not flows). For
// run.memory_budget's estimate.
uint64_t nccl_most_chunks_in_flight(const NcclConfig& cfg, int64_t gpus);

class AllToAll {
 public:
  // `proxies`: the GPUs' NCCL proxy threads, shared by every collective of a run; null: this
  // object has its own (a lone collective, a test).
  AllToAll(Network& net, Simulator& sim, const NcclConfig& config, NcclProxies* proxies = nullptr);
  AllToAll(const AllToAll&) = delete;
  AllToAll& operator=(const AllToAll&) = delete;

  // bytes(src, dst): payload bytes from every GPU to every GPU (all-to-all-v). `on_complete`
  // runs when the last byte has been delivered. One collective at a time per object.
  void start(const PerPair<uint64_t>& bytes, int priority, Callback on_complete);
  // The same for one pair alone (a matrix with one non-zero entry), without a GPUs x GPUs
  // matrix and its scan: NCCL group calls start each pair on its own, and at 256 GPUs those
  // scans were 64 % of megatron-te's CPU.
  void start_pair(int src, int dst, uint64_t bytes, int priority, Callback on_complete);
  // Uniform all-to-all: every GPU spreads `bytes_per_gpu` evenly over the other GPUs.
  static PerPair<uint64_t> uniform(int gpus, uint64_t bytes_per_gpu);

  bool finished() const { return outstanding_bytes_ == 0 && started_; }
  Time finish_time() const { return finish_; }

 private:
  struct Connection {
    int src = 0;
    int dst = 0;
    uint64_t left = 0;  // bytes not yet handed to the network
    int in_flight = 0;
    bool ll = false;  // LL protocol: every data byte costs kLLWireFactor bytes on the wire
    bool signalled = false;  // Simple over NVLink: fence, tail store and head store per step
    int relay = 0;    // nccl_pxn_relay: src, or the GPU whose NIC sends this connection's chunks
    uint64_t bytes = 0;   // this connection's share (the size of its last step follows from it)
    uint64_t issued = 0;  // signalled: steps whose copy has started
    uint64_t copied = 0;  // signalled: steps whose writes the network has taken (handed over)
    uint64_t posted = 0;  // steps whose tail store the sender has issued (in step order)
    uint64_t seen = 0;    // steps whose tail store has landed at the receiver
    uint64_t chunk = 0;   // this connection's step size (nccl_step_bytes)
    bool proxied = false;  // across nodes: the net transport through the proxies
    uint64_t tails = 0;    // proxied: steps whose tail the relay's proxy has seen
    uint64_t cts = 0;      // proxied: clear-to-sends from the receiver that reached the relay
    uint64_t isends = 0;   // proxied: RDMA writes queued on the relay's proxy
    uint64_t irecvs = 0;   // proxied: receives queued on the receiver's proxy
  };
  void begin(int priority, Callback on_complete);
  void add_pair(int src, int dst, uint64_t total);  // its connections, channel by channel
  void launch();                                    // issues every connection, in order
  void issue(size_t conn);
  void chunk_delivered(size_t conn, uint64_t bytes);
  // Signalled connections: starts the next step's copy if it may start; the step being copied
  // has been handed to the network; step `step`'s writes are acknowledged (its fence may
  // pass); posts the tails that may go; the tail store with value `tail` has landed.
  void copy_next(size_t conn);
  void copied(size_t conn);
  void fenced(size_t conn, uint64_t step);
  void post(size_t conn);
  void tail_landed(size_t conn, uint64_t tail);
  // Proxied connections (across nodes), in NCCL's order: the relay's proxy has seen tail
  // `tail`; queues the RDMA writes that tail and clear-to-send allow; one was posted; a step
  // arrived at the receiver; the receiver's proxy polled it; its GPU saw the tail; the
  // receiver's proxy posts a receive; the relay's proxy polled a send completion.
  void tail_seen(size_t conn, uint64_t tail);
  void queue_sends(size_t conn);
  void send_posted(size_t conn, uint64_t step);
  void step_arrived(size_t conn);
  void step_polled(size_t conn);
  void step_read(size_t conn);
  void post_receive(size_t conn);
  void send_polled(size_t conn);
  uint64_t step_size(const Connection& conn, uint64_t step) const {
    return std::min(conn.chunk, conn.bytes - step * conn.chunk);
  }
  // Counts delivered bytes; true if they completed the collective (its callback has run and
  // may have started the next one: the caller must not touch its connections).
  bool received(uint64_t bytes);

  Network& net_;
  Simulator& sim_;
  NcclConfig cfg_;
  std::unique_ptr<NcclProxies> own_proxies_;
  NcclProxies* proxies_;
  uint64_t generation_ = 0;  // per start: proxied events of an earlier collective are dropped
  Time pcie_;        // a store or poll between a GPU and host memory crosses PCIe once
  Time ack_;         // an RDMA write's ack (or a clear-to-send) from NIC to NIC, unloaded
  Time slot_return_;  // LL inside a node: a slot's return
  StreamOptions data_;  // signalled steps: complete when every write is acknowledged (the fence)
  StreamOptions flag_;  // a tail or head store: one 8-byte write
  std::vector<Connection> conns_;
  std::vector<uint8_t> fenced_;  // per connection, per slot: the step there has passed its fence
  uint64_t outstanding_bytes_ = 0;
  int priority_ = 0;
  bool started_ = false;
  Time finish_;
  Callback on_complete_;
};

// A thread block's one-sided put of `bytes` from src to dst, as stores of `store_bytes`
// (<= net.max_payload_bytes). Completes when every store is acknowledged (or delivered, with
// write acks off, or in the flow fidelity, which has no packets).
void thread_block_put(Network& net, int src, int dst, uint64_t bytes, uint32_t store_bytes, int priority,
                      Callback on_complete);

}  // namespace moehub
