#include "net/collectives.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "net/network.h"

namespace moehub {
namespace {
// An LL line (union ncclLLFifoLine, NVIDIA/nccl 5067397c src/include/device.h:75-85) is 16 bytes:
// two 4-byte data words, each followed by a 4-byte flag. The receiver polls the flags, so the
// line is its own ready signal. An LL pair (<= 16 KiB per channel) fits one LL step
// (LL buffer / NCCL_STEPS = 64 KiB of lines), so it never waits for a slot's return.
constexpr uint64_t kLLWireFactor = 16 / 8;
// The tail and head are uint64_t step counters written with st.relaxed.sys.global.u64
// (NVIDIA/nccl 5067397c src/device/op128.h:378-380): one 8-byte store each.
constexpr uint32_t kFlagBytes = 8;
}  // namespace

std::vector<int> nccl_p2p_deltas(int n) {
  int pow2 = 1;
  while (pow2 < n) pow2 <<= 1;
  std::vector<int> deltas;
  int delta = 0;
  for (int r = 0; static_cast<int>(deltas.size()) < n; ++r) {
    if (delta < n) deltas.push_back(delta);
    delta = (delta + r + 1) % pow2;
  }
  return deltas;
}

int nccl_pair_channels(const NcclConfig& cfg, uint64_t bytes, bool multi_node) {
  if (bytes == 0) return 1;
  // NVIDIA/nccl 5067397c src/enqueue.cc:918-920: in one node minPartSize = chunk/8 and
  // nChannels = min(nChannelsMin, divUp(bytes, minPartSize)). The doubling while a part exceeds
  // 32 x chunk (enqueue.cc:922-925) stops at nChannelsMax, which our single per-peer count makes
  // equal to nChannelsMin, so it never raises the count here. Once the GPUs span nodes the
  // step is the net chunk and minPartSize half of it (init.cc:830-834, enqueue.cc:918).
  const uint64_t min_part = std::max<uint64_t>(1, multi_node ? cfg.net_chunk_bytes / 2 : cfg.chunk_bytes / 8);
  const uint64_t parts = (bytes + min_part - 1) / min_part;
  return static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(cfg.channels_per_peer), parts));
}

bool nccl_pair_uses_ll(const NcclConfig& cfg, uint64_t bytes, int channels) {
  // NVIDIA/nccl 5067397c src/enqueue.cc:932: LL when bytes <= nChannels x NCCL_P2P_LL_THRESHOLD.
  return bytes <= static_cast<uint64_t>(channels) * cfg.ll_threshold_bytes;
}

uint64_t nccl_step_bytes(const NcclConfig& cfg, const NetConfig& net, int src, int dst, uint64_t bytes) {
  // NVIDIA/nccl 5067397c src/init.cc:830-834: a communicator over more than one node takes
  // NCCL_P2P_NET_CHUNKSIZE for every p2p step (x86 hosts: ratio 1), inside a node too.
  if (!net.scale_out()) return cfg.chunk_bytes;
  const uint64_t step = cfg.net_chunk_bytes;
  if (src / net.gpus_per_node == dst / net.gpus_per_node) return step;
  // enqueue.cc:938-943 "Tune chunk size for the network": a send smaller than a step moves
  // quarter steps, one smaller than 8 steps half steps (Simple; powers of two are exact in
  // u32fp8, enqueue.cc:945-949).
  if (bytes < step) return std::max<uint64_t>(1, step / 4);
  if (bytes < 8 * step) return std::max<uint64_t>(1, step / 2);
  return step;
}

int nccl_pxn_relay(const NetConfig& net, const NcclConfig& cfg, int src, int dst) {
  if (!cfg.pxn || !net.scale_out()) return src;
  const int per_node = net.gpus_per_node;
  if (src / per_node == dst / per_node) return src;
  // The GPU with dst's local index shares dst's rail (FabricTopology::rail_of: local % rails).
  return src / per_node * per_node + dst % per_node;
}

AllToAll::AllToAll(Network& net, Simulator& sim, const NcclConfig& config, NcclProxies* proxies)
    : net_(net), sim_(sim), cfg_(config), proxies_(proxies) {
  if (cfg_.chunk_bytes == 0 || cfg_.net_chunk_bytes == 0 || cfg_.steps < 1 || cfg_.channels_per_peer < 1) {
    throw std::logic_error("AllToAll: chunk, steps and channels must be positive");
  }
  if (proxies_ == nullptr) {
    own_proxies_ = std::make_unique<NcclProxies>(sim, net.config().gpus);
    proxies_ = own_proxies_.get();
  }
  const NetConfig& nc = net.config();
  pcie_ = nc.pcie_latency;
  // From the far NIC back to the near one on one leaf (a PXN pair is on one rail): both NICs,
  // two cables and the leaf; the far end's PCIe is not on this path and the near end's is the
  // completion's (or clear-to-send's) write into host memory, counted by the caller.
  ack_ = nc.nic_latency * 2 + nc.fabric_cable_latency * 2 + nc.fabric_switch_latency;
  // LL inside a node spread over more than one step (a threshold above the chunk): the
  // receiver's head update crossing back to the sender, as an unloaded header-only packet.
  slot_return_ = net.config().unloaded_packet_latency(0);
  // The sender's fence (fence.acq_rel.sys before the tail store, prims_simple.h:166-171)
  // orders the step's writes before the tail: it passes once they are acknowledged. Without
  // write acks (or in the flow fidelity, which has no packets) it passes at their delivery.
  data_.complete_on_ack = net.config().write_ack;
  flag_.packet_payload = kFlagBytes;
  flag_.kind = PacketKind::Flag;
}

PerPair<uint64_t> AllToAll::uniform(int gpus, uint64_t bytes_per_gpu) {
  PerPair<uint64_t> m(gpus, 0);
  if (gpus < 2) return m;
  const uint64_t peers = static_cast<uint64_t>(gpus - 1);
  for (int s = 0; s < gpus; ++s) {
    for (int k = 1; k < gpus; ++k) {
      const int d = (s + k) % gpus;
      // The first bytes_per_gpu % peers peers (in ring order) take one extra byte.
      m(s, d) = bytes_per_gpu / peers + (static_cast<uint64_t>(k - 1) < bytes_per_gpu % peers ? 1 : 0);
    }
  }
  return m;
}

void AllToAll::begin(int priority, Callback on_complete) {
  if (started_ && outstanding_bytes_ > 0) throw std::logic_error("AllToAll: previous collective still running");
  started_ = true;
  ++generation_;
  priority_ = priority;
  on_complete_ = std::move(on_complete);
  conns_.clear();
  outstanding_bytes_ = 0;
}

void AllToAll::add_pair(int src, int dst, uint64_t total) {
  if (total == 0) return;  // NCCL skips zero-size sends
  const uint32_t packet = net_.config().max_payload_bytes;
  // Split over channels in whole packets, so no channel adds a partial packet of its own.
  const NetConfig& net = net_.config();
  const int channels = nccl_pair_channels(cfg_, total, net.scale_out());
  const bool ll = nccl_pair_uses_ll(cfg_, total, channels);
  const uint64_t per = (total + static_cast<uint64_t>(channels) - 1) / static_cast<uint64_t>(channels);
  const uint64_t share = (per + packet - 1) / packet * packet;
  const uint64_t chunk = nccl_step_bytes(cfg_, net, src, dst, total);
  // NVLink p2p (write mode on Hopper: graph/paths.cc:416-417 enables read only for sm_80) uses
  // the per-step stores; LL needs none, the net transport across nodes is another protocol.
  const bool one_node = !net.scale_out() || src / net.gpus_per_node == dst / net.gpus_per_node;
  for (uint64_t off = 0; off < total; off += share) {
    Connection conn;
    conn.src = src;
    conn.dst = dst;
    conn.bytes = std::min(share, total - off);
    conn.left = conn.bytes;
    conn.ll = ll;
    conn.signalled = !ll && one_node;
    conn.proxied = !one_node;
    conn.chunk = chunk;
    conn.relay = nccl_pxn_relay(net, cfg_, src, dst);
    conns_.push_back(conn);
    outstanding_bytes_ += conn.bytes;
  }
}

void AllToAll::launch() {
  if (outstanding_bytes_ == 0) {
    finish_ = sim_.now();
    sim_.schedule_in(Time::zero(), std::move(on_complete_));
    return;
  }
  fenced_.assign(conns_.size() * static_cast<size_t>(cfg_.steps), 0);
  for (size_t c = 0; c < conns_.size(); ++c) {
    // The receiver's proxy posts its first receives as the operation is appended (net.cc
    // recvProxyProgress: up to NCCL_STEPS ahead of the GPU).
    if (conns_[c].proxied) {
      const uint64_t steps = (conns_[c].bytes + conns_[c].chunk - 1) / conns_[c].chunk;
      for (uint64_t k = 0; k < std::min<uint64_t>(steps, static_cast<uint64_t>(cfg_.steps)); ++k) post_receive(c);
    }
    issue(c);
  }
}

void AllToAll::start(const PerPair<uint64_t>& bytes, int priority, Callback on_complete) {
  const int n = net_.config().gpus;
  if (bytes.gpus() != n) throw std::logic_error("AllToAll: matrix is not gpus x gpus");
  begin(priority, std::move(on_complete));
  const std::vector<int> deltas = nccl_p2p_deltas(n);
  // Rounds in NCCL order; round 0 is the self copy, which does not use the fabric.
  for (size_t r = 1; r < deltas.size(); ++r) {
    for (int src = 0; src < n; ++src) {
      const int dst = (src + deltas[r]) % n;
      add_pair(src, dst, bytes(src, dst));
    }
  }
  launch();
}

void AllToAll::start_pair(int src, int dst, uint64_t bytes, int priority, Callback on_complete) {
  const int n = net_.config().gpus;
  if (src < 0 || dst < 0 || src >= n || dst >= n) throw std::logic_error("AllToAll: GPU index out of range");
  begin(priority, std::move(on_complete));
  // As start() with one entry: the self pair is round 0, which start() skips.
  if (src != dst) add_pair(src, dst, bytes);
  launch();
}

void AllToAll::issue(size_t c) {
  Connection& conn = conns_[c];
  if (conn.signalled || conn.proxied) {
    copy_next(c);
    return;
  }
  // LL inside a node: its lines carry their own flags, no per-step stores.
  while (conn.left > 0 && conn.in_flight < cfg_.steps) {
    const uint64_t chunk = std::min(conn.left, conn.chunk);
    conn.left -= chunk;
    ++conn.in_flight;
    const uint64_t wire = conn.ll ? chunk * kLLWireFactor : chunk;
    net_.transfer(conn.src, conn.dst, wire, priority_, [this, c, chunk] { chunk_delivered(c, chunk); });
  }
}

bool AllToAll::received(uint64_t bytes) {
  outstanding_bytes_ -= bytes;
  if (outstanding_bytes_ > 0) return false;
  finish_ = sim_.now();
  Callback done = std::move(on_complete_);
  done();
  return true;
}

// The send group's worker warps copy one step at a time (genericOp's loop, NVIDIA/nccl 5067397c
// src/device/prims_simple.h:218-282); a spare post warp fences and posts a step's tail while
// they copy the next ("an extra warp to overlap the threadfence and the copy",
// prims_simple.h:585-586), which a send group of three or more warps has: 20 warps a CTA
// (NCCL_MAX_NTHREADS, enqueue.cc:1135) over at most four works (sendrecv.h:106-113).
// The barrier after copying step k waits for the post of step k-1, so step k+1's copy starts
// once step k is handed over, tail k-1 is posted and a slot is free.
void AllToAll::copy_next(size_t c) {
  Connection& conn = conns_[c];
  if (conn.left == 0 || conn.in_flight >= cfg_.steps) return;
  if (conn.copied < conn.issued || conn.posted + 1 < conn.issued) return;
  const uint64_t chunk = std::min(conn.left, conn.chunk);
  conn.left -= chunk;
  ++conn.in_flight;
  const uint64_t step = conn.issued++;
  if (conn.proxied && conn.relay == conn.src) {
    // The net transport's FIFO is in the sender's own memory (GPUDirect): a copy inside the
    // GPU, not timed here (HBM is some 60x the NIC's rate); its fence passes at once.
    fenced(c, step);
    copied(c);
    return;
  }
  // Into the receiver's FIFO, or with PXN the relay's; LL lines are twice the data.
  const int to = conn.proxied ? conn.relay : conn.dst;
  const uint64_t wire = conn.ll ? chunk * kLLWireFactor : chunk;
  // The hand-over may be reported at once (a step that fits the egress FIFO).
  net_.stream_sent(conn.src, to, wire, priority_, data_, [this, c] { copied(c); },
                   [this, c, step] { fenced(c, step); });
}

void AllToAll::copied(size_t c) {
  ++conns_[c].copied;
  post(c);
  copy_next(c);
}

void AllToAll::fenced(size_t c, uint64_t step) {
  const size_t slots = static_cast<size_t>(cfg_.steps);
  fenced_[c * slots + step % slots] = 1;
  post(c);
}

void AllToAll::post(size_t c) {
  const size_t slots = static_cast<size_t>(cfg_.steps);
  Connection& conn = conns_[c];
  // The post warp posts the tails in step order, each once its step is copied (the barrier)
  // and its writes are acknowledged (the fence).
  bool posted = false;
  while (conn.posted < conn.copied && fenced_[c * slots + conn.posted % slots] != 0) {
    fenced_[c * slots + conn.posted % slots] = 0;
    const uint64_t tail = ++conn.posted;
    posted = true;
    if (conn.proxied) {
      // The net transport's tail lives in host memory (recvMem), which the proxy polls.
      sim_.schedule_in(pcie_, [this, c, tail, gen = generation_] {
        if (gen == generation_) tail_seen(c, tail);
      });
      continue;
    }
    net_.stream(conn.src, conn.dst, kFlagBytes, priority_, flag_, [this, c, tail] { tail_landed(c, tail); });
  }
  if (posted) copy_next(c);
}

void AllToAll::tail_landed(size_t c, uint64_t tail) {
  // The receiver polls its tail (waitPeer, prims_simple.h:107-108); stores of the same counter
  // may land out of order on different planes, and the largest value covers the ones before.
  while (conns_[c].seen < tail) {
    Connection& conn = conns_[c];
    const uint64_t step = conn.seen++;
    const uint64_t bytes = step_size(conn, step);
    // After reading the slot the receiver stores its head into the sender's memory
    // (postPeer, no fence on the receive side); the sender reuses the slot when it lands.
    if (conn.left > 0) {
      net_.stream(conn.dst, conn.src, kFlagBytes, priority_, flag_, [this, c] {
        --conns_[c].in_flight;
        issue(c);
      });
    } else {
      // Nothing more to send: the store still crosses the fabric, nobody waits for it.
      --conn.in_flight;
      net_.stream(conn.dst, conn.src, kFlagBytes, priority_, flag_, [] {});
    }
    if (received(bytes)) return;
  }
}

// The net transport across nodes (NVIDIA/nccl 5067397c src/transport/net.cc sendProxyProgress
// :1304-1468, recvProxyProgress :1470-1761; src/transport/net_ib/p2p.cc). Every callback below
// carries the collective's generation: the proxies and the fabric outlive a collective, so a
// late completion (a send polled after the receiver has read the last step) must not touch the
// next collective's connections.

void AllToAll::tail_seen(size_t c, uint64_t tail) {
  Connection& conn = conns_[c];
  conn.tails = std::max(conn.tails, tail);
  queue_sends(c);
}

void AllToAll::queue_sends(size_t c) {
  Connection& conn = conns_[c];
  // ncclIbIsend posts step k once its tail is seen (net.cc:1357-1358) and the receiver's
  // clear-to-send for it is in the FIFO (p2p.cc:276-284), one queue pair's writes in order.
  while (conn.isends < std::min(conn.tails, conn.cts)) {
    const uint64_t step = conn.isends++;
    proxies_->run(conn.relay, cfg_.proxy_post_cost, Time::zero(), [this, c, step, gen = generation_] {
      if (gen == generation_) send_posted(c, step);
    });
  }
}

void AllToAll::send_posted(size_t c, uint64_t step) {
  const Connection& conn = conns_[c];
  const uint64_t bytes = step_size(conn, step);
  const uint64_t wire = conn.ll ? bytes * kLLWireFactor : bytes;
  // One RDMA write with immediate (ncclIbMultiSend, p2p.cc:83-239) from the relay's NIC.
  net_.transfer(conn.relay, conn.dst, wire, priority_, [this, c, gen = generation_] {
    if (gen == generation_) step_arrived(c);
  });
}

void AllToAll::step_arrived(size_t c) {
  const Connection& conn = conns_[c];
  // The receive completion is in the receiver's CQ as the data lands; the send completion
  // waits for the RC ack to reach the relay's NIC and its CQE to cross PCIe into host memory.
  proxies_->run(conn.dst, cfg_.proxy_poll_cost, Time::zero(), [this, c, gen = generation_] {
    if (gen == generation_) step_polled(c);
  });
  sim_.schedule_in(ack_ + pcie_, [this, c, gen = generation_] {
    if (gen != generation_) return;
    // The relay's proxy polls the send (ncclIbTest) and hands the slot back: the GPU reads the
    // head from host memory across PCIe.
    proxies_->run(conns_[c].relay, cfg_.proxy_poll_cost, pcie_, [this, c, gen] {
      if (gen == generation_) send_polled(c);
    });
  });
}

void AllToAll::step_polled(size_t c) {
  const Connection& conn = conns_[c];
  const auto tail = [this, c, gen = generation_] {
    // The proxy stores the tail into host memory (net.cc:1709-1711); the GPU's poll reads it
    // across PCIe.
    sim_.schedule_in(pcie_, [this, c, gen] {
      if (gen == generation_) step_read(c);
    });
  };
  if (!cfg_.gdr_flush) {
    tail();
    return;
  }
  // ncclIbIflush (net.cc:1641-1690, p2p.cc:525-560): an RDMA read through the NIC of the
  // received buffer (PCIe there and back), posted and then polled.
  proxies_->run(conn.dst, cfg_.proxy_post_cost, pcie_ * 2, [this, c, tail, gen = generation_] {
    if (gen != generation_) return;
    proxies_->run(conns_[c].dst, cfg_.proxy_poll_cost, Time::zero(), [this, tail, gen] {
      if (gen == generation_) tail();
    });
  });
}

void AllToAll::step_read(size_t c) {
  Connection& conn = conns_[c];
  const uint64_t step = conn.seen++;
  const uint64_t total = (conn.bytes + conn.chunk - 1) / conn.chunk;
  // The GPU stores its head into host memory once it has read the step; the proxy then posts
  // the receive NCCL_STEPS ahead (net.cc:1524-1526).
  if (conn.irecvs < total) {
    sim_.schedule_in(pcie_, [this, c, gen = generation_] {
      if (gen == generation_) post_receive(c);
    });
  }
  received(step_size(conn, step));
}

void AllToAll::post_receive(size_t c) {
  const Connection& conn = conns_[c];
  ++conns_[c].irecvs;
  // ncclIbIrecv (p2p.cc:430-523): ibv_post_recv, then the clear-to-send, an inline RDMA write
  // into the sender's FIFO in host memory (ncclIbPostFifo, p2p.cc:364-428): NIC to NIC, then
  // PCIe.
  proxies_->run(conn.dst, cfg_.proxy_post_cost * 2, ack_ + pcie_, [this, c, gen = generation_] {
    if (gen != generation_) return;
    ++conns_[c].cts;
    queue_sends(c);
  });
}

void AllToAll::send_polled(size_t c) {
  // The freed slot: the sender's GPU may copy its next step (shared buffers: the proxy posts
  // the next buffer as the head, net.cc:1334-1349).
  --conns_[c].in_flight;
  copy_next(c);
}

void AllToAll::chunk_delivered(size_t c, uint64_t bytes) {
  if (received(bytes)) return;
  if (conns_[c].left == 0) {
    --conns_[c].in_flight;
    return;
  }
  sim_.schedule_in(slot_return_, [this, c] {
    --conns_[c].in_flight;
    issue(c);
  });
}

uint64_t nccl_most_chunks_in_flight(const NcclConfig& cfg, int64_t gpus) {
  const auto n = static_cast<uint64_t>(std::max<int64_t>(gpus, 1));
  const auto channels = static_cast<uint64_t>(std::max(cfg.channels_per_peer, 0));
  return n * (n - 1) * channels * static_cast<uint64_t>(std::max(cfg.steps, 0));
}

void thread_block_put(Network& net, int src, int dst, uint64_t bytes, uint32_t store_bytes, int priority,
                      Callback on_complete) {
  if (store_bytes == 0 || store_bytes > net.config().max_payload_bytes) {
    throw std::logic_error("thread_block_put: store size must be 1..net.max_payload_bytes");
  }
  StreamOptions o;
  o.packet_payload = store_bytes;
  o.kind = PacketKind::Write;
  o.complete_on_ack = net.config().write_ack;
  net.stream(src, dst, bytes, priority, o, std::move(on_complete));
}

}  // namespace moehub
