#pragma once
// Carries a thread block's stores to peer memory onto the fabric as ordinary write packets
// (at most net.max_payload_bytes each). A small staging queue per GPU stands for the SM-to-hub
// path; when it is full the store is refused and retried once the fabric takes packets again,
// so a congested destination back-pressures the issuing thread blocks. Stores to the GPU's own
// memory go straight to its receiver, without packets.

#include <cstdint>
#include <deque>

#include "gpu/store_port.h"
#include "net/packet.h"
#include "sim/callback.h"

namespace moehub {

class Cluster;

class NetworkStorePort final : public gpu::StorePort, public RoomListener, public PacketClient {
 public:
  NetworkStorePort(Cluster& cluster, int gpu);
  bool try_store(const gpu::StoreRequest& store, Callback retry) override;
  void on_room(int gpu) override;

  uint64_t refused() const { return refused_; }

 private:
  struct Pending {
    int dst;
    uint64_t bytes_left;
    uint64_t tag;
  };
  void pump();
  // A store's write as it crosses the fabric (a packet), or as the receiver takes a flow's.
  Packet store_packet(int dst, uint32_t payload, uint64_t tag);

  Cluster& cluster_;
  int gpu_;
  uint32_t max_payload_;
  uint64_t staged_bytes_ = 0;
  uint64_t staging_limit_;
  struct Refused {
    uint64_t bytes;
    Callback retry;
  };
  bool fits(uint64_t bytes) const { return staged_bytes_ == 0 || staged_bytes_ + bytes <= staging_limit_; }

  std::deque<Pending> queue_;
  std::deque<Refused> retries_;  // refused stores, woken in order, one at a time, once they fit
  bool retry_woken_ = false;
  bool waiting_for_room_ = false;
  uint64_t refused_ = 0;
};

}  // namespace moehub
