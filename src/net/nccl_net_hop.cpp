#include "net/nccl_net_hop.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moehub {

NcclNetHop::NcclNetHop(Network& net, Simulator& sim, NcclProxies& proxies, const NcclConfig& cfg, int src, int dst,
                       uint64_t slices, int slots)
    : net_(net),
      sim_(sim),
      proxies_(proxies),
      cfg_(cfg),
      src_(src),
      dst_(dst),
      relay_(nccl_pxn_relay(net.config(), cfg, src, dst)),
      slices_(slices),
      slots_(slots) {
  const NetConfig& nc = net.config();
  if (!nc.scale_out() || src / nc.gpus_per_node == dst / nc.gpus_per_node) {
    throw std::logic_error("NcclNetHop: the GPUs must sit on different nodes");
  }
  if (slots < 1) throw std::logic_error("NcclNetHop: a hop needs a slot");
  // As AllToAll: a store or poll between a GPU and host memory crosses PCIe once; an ack or a
  // clear-to-send goes NIC to NIC over one leaf (the relay shares the receiver's rail).
  pcie_ = nc.pcie_latency;
  ack_ = nc.nic_latency * 2 + nc.fabric_cable_latency * 2 + nc.fabric_switch_latency;
  data_.complete_on_ack = nc.write_ack;
  bytes_.reserve(static_cast<size_t>(slices));
  fenced_.reserve(static_cast<size_t>(slices));
}

void NcclNetHop::set_hooks(StepHook on_posted, StepHook on_slot_free, StepHook on_read) {
  on_posted_ = std::move(on_posted);
  on_slot_free_ = std::move(on_slot_free);
  on_read_ = std::move(on_read);
}

void NcclNetHop::open_receiver() {
  if (open_) throw std::logic_error("NcclNetHop: receiver opened twice");
  open_ = true;
  // recvProxyProgress posts up to NCCL_STEPS / sliceSteps receives ahead (net.cc:1519-1602).
  const uint64_t first = std::min<uint64_t>(slices_, static_cast<uint64_t>(slots_));
  for (uint64_t k = 0; k < first; ++k) {
    ++irecvs_;
    post_receive();
  }
}

void NcclNetHop::push(uint64_t bytes) {
  if (pushed_ >= slices_) throw std::logic_error("NcclNetHop: more slices than announced");
  bytes_.push_back(bytes);
  fenced_.push_back(0);
  ++pushed_;
  copy_next();
}

// The send group's workers copy one slice at a time and the post warp posts the tails in order
// (prims_simple.h:218-282, 585-586), as AllToAll::copy_next: the next copy starts once the last
// is handed over, the tail before it is posted and a slot is free.
void NcclNetHop::copy_next() {
  if (copying_ == pushed_ || copying_ - freed_ >= static_cast<uint64_t>(slots_)) return;
  if (copied_ < copying_ || posted_ + 1 < copying_) return;
  const uint64_t k = copying_++;
  if (relay_ == src_) {  // the FIFO is in the sender's own memory (GPUDirect): not timed
    fenced_[k] = 1;
    ++copied_;
    post();
    copy_next();
    return;
  }
  net_.stream_sent(
      src_, relay_, bytes_[k], 0, data_,
      [this] {
        ++copied_;
        post();
        copy_next();
      },
      [this, k] {
        fenced_[k] = 1;
        post();
      });
}

void NcclNetHop::post() {
  bool any = false;
  while (posted_ < copied_ && fenced_[posted_] != 0) {
    const uint64_t k = posted_++;
    any = true;
    if (on_posted_) on_posted_(k);
    // The tail lives in host memory (recvMem, net.cc:1357), which the relay's proxy polls.
    sim_.schedule_in(pcie_, [this, k] {
      tails_ = std::max(tails_, k + 1);
      queue_sends();
    });
  }
  if (any) copy_next();
}

void NcclNetHop::queue_sends() {
  // ncclIbIsend posts slice k once its tail is seen and the receiver's clear-to-send for it is
  // in the FIFO (p2p.cc:276-284), in order.
  while (isends_ < std::min(tails_, cts_)) {
    const uint64_t k = isends_++;
    proxies_.run(relay_, cfg_.proxy_post_cost, Time::zero(), [this, k] { send_posted(k); });
  }
}

void NcclNetHop::send_posted(uint64_t k) {
  // One RDMA write with immediate per slice (ncclIbMultiSend, p2p.cc:83-239).
  net_.transfer(relay_, dst_, bytes_[k], 0, [this, k] { arrived(k); });
}

void NcclNetHop::arrived(uint64_t k) {
  proxies_.run(dst_, cfg_.proxy_poll_cost, Time::zero(), [this, k] { polled(k); });
  // The send completion waits for the RC ack and its CQE's PCIe write; the relay's proxy polls
  // it and the GPU reads the freed slot (the head) across PCIe.
  sim_.schedule_in(ack_ + pcie_, [this, k] {
    proxies_.run(relay_, cfg_.proxy_poll_cost, pcie_, [this, k] {
      ++freed_;
      if (on_slot_free_) on_slot_free_(k);
      copy_next();
    });
  });
}

void NcclNetHop::polled(uint64_t k) {
  auto tail = [this, k] {
    // The proxy stores the tail into host memory (net.cc:1709-1711); the GPU polls it there.
    sim_.schedule_in(pcie_, [this, k] {
      ++read_;
      if (on_read_) on_read_(k);
    });
  };
  if (!cfg_.gdr_flush) {
    tail();
    return;
  }
  // ncclIbIflush (net.cc:1641-1690): an RDMA read through the NIC, posted then polled.
  proxies_.run(dst_, cfg_.proxy_post_cost, pcie_ * 2, [this, tail] {
    proxies_.run(dst_, cfg_.proxy_poll_cost, Time::zero(), tail);
  });
}

void NcclNetHop::consumed() {
  if (consumed_ >= read_) throw std::logic_error("NcclNetHop: consumed a slice not yet read");
  ++consumed_;
  // The head goes to host memory; the proxy then posts the next receive (net.cc:1524-1526).
  if (irecvs_ < slices_) {
    ++irecvs_;
    sim_.schedule_in(pcie_, [this] { post_receive(); });
  }
}

void NcclNetHop::post_receive() {
  // ncclIbIrecv: ibv_post_recv and the clear-to-send, an inline RDMA write into the sender's
  // FIFO in host memory (p2p.cc:364-523): NIC to NIC, then PCIe.
  proxies_.run(dst_, cfg_.proxy_post_cost * 2, ack_ + pcie_, [this] {
    ++cts_;
    queue_sends();
  });
}

}  // namespace moehub
