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
  pkt.flow_batch = Packet::kFlowBatchStore;  // independent writes: a flow batch may carry them (net.flow_store_batch_bytes)
  return pkt;
}

NetworkStorePort::NetworkStorePort(Cluster& cluster, int gpu)
    : PacketClient(/*cookie_is_for_receiver=*/true),
      cluster_(cluster),
      gpu_(gpu),
      staging_(cluster.sim(), cluster.gpu_config().store_staging_bytes) {}

bool NetworkStorePort::try_store(const gpu::StoreRequest& store, Callback retry) {
  const int dst = static_cast<int>(store.dst_gpu);
  if (dst == gpu_) {
    // No fabric to cross, but the GPU's receiver still takes the write: it alone knows what
    // the tag means (a signal id, or a code its system acts on).
    cluster_.receiver(dst).deliver(store_packet(dst, static_cast<uint32_t>(store.bytes), store.tag));
    return true;
  }
  if (!staging_.admit(store, std::move(retry))) return false;
  pump();
  return true;
}

void NetworkStorePort::pump() {
  Network& net = cluster_.network();
  while (!staging_.empty()) {
    const StoreStaging::Staged& p = staging_.front();
    // One message per packet of its path (an NVLink packet, an RDMA MTU across nodes), or the
    // whole store where a message is a flow.
    const uint32_t payload = static_cast<uint32_t>(std::min<uint64_t>(p.bytes - p.done, net.message_limit_to(gpu_, p.dst)));
    if (!net.can_send_to(gpu_, p.dst, payload)) {
      if (!waiting_for_room_) {
        waiting_for_room_ = true;
        net.request_room_to(gpu_, p.dst, this);
      }
      return;
    }
    net.send(store_packet(p.dst, payload, p.tag));
    staging_.took(payload);
  }
  staging_.release();
}

void NetworkStorePort::on_room(int) {
  waiting_for_room_ = false;
  pump();
}

}  // namespace moehub
