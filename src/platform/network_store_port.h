#pragma once
// Carries a thread block's stores to peer memory onto the fabric as ordinary write messages
// (packets of at most net.max_payload_bytes each, an RDMA MTU across nodes, or one flow per
// store at flow fidelity),
// through the GPU's staging FIFO (StoreStaging): when it is full the store is refused and
// retried once it fits, so a congested destination back-pressures the issuing thread blocks.
// Stores to the GPU's own memory go straight to its receiver, without the fabric.

#include <cstdint>

#include "gpu/store_port.h"
#include "net/packet.h"
#include "platform/store_staging.h"
#include "sim/callback.h"

namespace moehub {

class Cluster;

class NetworkStorePort final : public gpu::StorePort, public RoomListener, public PacketClient {
 public:
  NetworkStorePort(Cluster& cluster, int gpu);
  bool try_store(const gpu::StoreRequest& store, Callback retry) override;
  void on_room(int gpu) override;

  uint64_t refused() const { return staging_.refused(); }

 private:
  void pump();
  // A store's write as it crosses the fabric, or as the GPU's own receiver takes it.
  Packet store_packet(int dst, uint32_t payload, uint64_t tag);

  Cluster& cluster_;
  int gpu_;
  StoreStaging staging_;
  bool waiting_for_room_ = false;
};

}  // namespace moehub
