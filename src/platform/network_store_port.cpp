#include "platform/network_store_port.h"

#include <algorithm>

#include "platform/cluster.h"

namespace moehub {

Packet NetworkStorePort::store_packet(int dst, uint32_t payload, uint64_t tag) {
  Packet pkt;
  pkt.src = gpu_;
  pkt.dst = dst;
  pkt.payload_bytes = payload;
  pkt.kind = PacketKind::Write;
  pkt.cookie = tag;
  pkt.client = this;
  pkt.ack_awaited = false;  // remote stores are not fenced here: their acks are only traffic
  return pkt;
}

NetworkStorePort::NetworkStorePort(Cluster& cluster, int gpu)
    : PacketClient(/*cookie_is_for_receiver=*/true),
      cluster_(cluster),
      gpu_(gpu),
      max_payload_(cluster.network().config().max_payload_bytes),
      staging_limit_(cluster.config().bytes("gpu.store_staging_bytes")) {}

bool NetworkStorePort::try_store(const gpu::StoreRequest& store, Callback retry) {
  const int dst = static_cast<int>(store.dst_gpu);
  if (dst == gpu_) {
    // No fabric to cross, but the GPU's receiver still takes the write: it alone knows what
    // the tag means (a signal id, or a code its system acts on).
    cluster_.receiver(dst).deliver(store_packet(dst, static_cast<uint32_t>(store.bytes), store.tag));
    return true;
  }
  PacketNetwork* packets = cluster_.packets();
  if (!packets) {
    // Flow fidelity: the store is a small flow; when the fabric has carried it, the destination's
    // receiver takes it as it would take the store's packet (a system's receiver decodes the
    // tag: RemoteMemory reports the write's code to its system).
    const uint64_t tag = store.tag;
    const uint64_t bytes = store.bytes;
    cluster_.network().transfer(gpu_, dst, bytes, 0, [this, dst, bytes, tag] {
      cluster_.receiver(dst).deliver(store_packet(dst, static_cast<uint32_t>(bytes), tag));
    });
    return true;
  }
  if (!fits(store.bytes)) {
    ++refused_;
    retries_.push_back({store.bytes, std::move(retry)});
    return false;
  }
  staged_bytes_ += store.bytes;
  queue_.push_back({dst, store.bytes, store.tag});
  pump();
  return true;
}

void NetworkStorePort::pump() {
  PacketNetwork* packets = cluster_.packets();
  while (!queue_.empty()) {
    Pending& p = queue_.front();
    const uint32_t payload = static_cast<uint32_t>(std::min<uint64_t>(p.bytes_left, max_payload_));
    if (!packets->can_inject(gpu_, payload)) {
      if (!waiting_for_room_) {
        waiting_for_room_ = true;
        packets->request_room(gpu_, this);
      }
      return;
    }
    packets->inject(store_packet(p.dst, payload, p.tag));
    p.bytes_left -= payload;
    staged_bytes_ -= payload;
    if (p.bytes_left == 0) queue_.pop_front();
  }
  // Room in the staging queue: let the oldest refused store try again (outside try_store) once
  // it fits. Waking only that one, and only then, keeps a queue of row-sized stores from
  // retrying at every packet that leaves.
  if (!retry_woken_ && !retries_.empty() && fits(retries_.front().bytes)) {
    retry_woken_ = true;
    Callback r = std::move(retries_.front().retry);
    retries_.pop_front();
    cluster_.sim().schedule_in(Time::zero(), [this, r = std::move(r)]() mutable {
      retry_woken_ = false;
      r();
      pump();
    });
  }
}

void NetworkStorePort::on_room(int) {
  waiting_for_room_ = false;
  pump();
}

}  // namespace moehub
