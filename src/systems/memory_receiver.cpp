#include "systems/memory_receiver.h"

#include "systems/cluster.h"

namespace moehub {

void MemoryReceiver::deliver(Packet&& packet) {
  if (!is_write(packet.kind)) return;
  cluster_.deliver_write(gpu_, packet.payload_bytes, packet.cookie);
}

}  // namespace moehub
