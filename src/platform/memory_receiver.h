#pragma once
// The destination side of ordinary writes: an arriving packet is written into the GPU's memory
// (sharing HBM bandwidth with everything else), then the signal named by its tag, if any, is
// bumped by the bytes written, which is how a consumer's poll or hardware wait learns of it.

#include "net/packet.h"

namespace moehub {

class Cluster;

class MemoryReceiver final : public PacketReceiver {
 public:
  MemoryReceiver(Cluster& cluster, int gpu) : cluster_(cluster), gpu_(gpu) {}
  void deliver(Packet&& packet) override;

 private:
  Cluster& cluster_;
  int gpu_;
};

}  // namespace moehub
