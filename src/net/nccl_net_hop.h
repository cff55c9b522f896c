#pragma once
// One ring connection of NCCL's net transport between GPUs on different nodes (NVIDIA/nccl
// 5067397c src/transport/net.cc sendProxyProgress :1304-1468, recvProxyProgress :1470-1761),
// for the ring collectives (platform/nccl_ring*, the count all-gather and the TP rings). A
// ring's send and receive connectors per channel are the same net transport as a p2p pair's,
// driven by the same proxy threads (NcclProxies); what differs is that a ring hop's steps
// become ready one by one as the ring's data reaches the sender (all_gather.h:46-75: each step
// forwards what the previous one received), and that one RDMA write carries a slice of
// `sliceSteps` FIFO steps (net.cc:1347, 1567: the proxy posts and sends `sliceSteps` at a time),
// so a hop of slices has NCCL_STEPS / sliceSteps of them in flight.
//
// The sequence per slice, as AllToAll's proxied connections (net/collectives.h):
//  - the sender's GPU copies the slice into the FIFO (its own memory: untimed, HBM being some
//    60x the NIC; with PXN the relay's over NVLink, fenced on the writes' acks), then stores
//    the tail into host memory, seen by the relay's proxy one PCIe latency later;
//  - the relay's proxy posts the RDMA write once that tail and the receiver's clear-to-send
//    are there (ncclIbIsend), in slice order, and polls its completion when the RC ack is back
//    (the sender's slot is free one PCIe latency after that);
//  - the receiver's proxy posts `slots` receives ahead (each with its clear-to-send), polls
//    each arrival, flushes if asked, and stores the tail; the receiver's GPU reads it one PCIe
//    latency later; when the GPU has consumed the slice (`consumed`) its head store lets the
//    proxy post the next receive.

#include <cstdint>
#include <functional>
#include <vector>

#include "net/collectives.h"
#include "net/nccl_proxy.h"
#include "net/network.h"
#include "sim/simulator.h"

namespace moehub {

class NcclNetHop {
 public:
  using StepHook = std::function<void(uint64_t slice)>;

  // src -> dst on different nodes, `slices` slices in all, at most `slots` in flight; through
  // the PXN relay (nccl_pxn_relay) when PXN is on and src's rail is not dst's.
  NcclNetHop(Network& net, Simulator& sim, NcclProxies& proxies, const NcclConfig& cfg, int src, int dst,
             uint64_t slices, int slots);
  NcclNetHop(const NcclNetHop&) = delete;
  NcclNetHop& operator=(const NcclNetHop&) = delete;

  // on_posted(k): the sender's GPU has stored slice k's tail (its kernel's last act for it);
  // on_slot_free(k): the sender's GPU sees slice k's slot free; on_read(k): the receiver's
  // GPU sees slice k in its FIFO.
  void set_hooks(StepHook on_posted, StepHook on_slot_free, StepHook on_read);
  // The receiver's operation is live (its kernel runs): its proxy posts the first receives.
  void open_receiver();
  // The sender's next slice (in order), `bytes` on the wire, is ready to be copied into the
  // FIFO; it waits there for a free slot.
  void push(uint64_t bytes);
  // The receiver's GPU is done with its oldest unconsumed slice: it stores the head.
  void consumed();
  bool slot_free() const { return pushed_ - freed_ < static_cast<uint64_t>(slots_); }
  int relay() const { return relay_; }

 private:
  void copy_next();
  void post();
  void queue_sends();
  void send_posted(uint64_t slice);
  void arrived(uint64_t slice);
  void polled(uint64_t slice);
  void post_receive();

  Network& net_;
  Simulator& sim_;
  NcclProxies& proxies_;
  NcclConfig cfg_;
  int src_, dst_, relay_;
  uint64_t slices_;
  int slots_;
  Time pcie_, ack_;
  StreamOptions data_;
  std::vector<uint64_t> bytes_;  // per slice pushed
  std::vector<uint8_t> fenced_;  // per slice: its FIFO writes are acknowledged
  uint64_t pushed_ = 0, copying_ = 0, copied_ = 0, posted_ = 0;
  uint64_t tails_ = 0, cts_ = 0, isends_ = 0, irecvs_ = 0, read_ = 0, consumed_ = 0, freed_ = 0;
  bool copy_busy_ = false;
  bool open_ = false;
  StepHook on_posted_, on_slot_free_, on_read_;
};

}  // namespace moehub
