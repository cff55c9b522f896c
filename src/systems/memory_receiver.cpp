#include "systems/memory_receiver.h"

#include "systems/cluster.h"
#include "systems/network_store_port.h"

namespace moehub {

void MemoryReceiver::deliver(Packet&& packet) {
  if (!is_write(packet.kind)) return;
  // Only a thread block's stores (NetworkStorePort) carry a signal tag in their cookie; a
  // transfer's (collective's) cookie is the transfer engine's own id.
  const bool tagged = dynamic_cast<NetworkStorePort*>(packet.client) != nullptr;
  cluster_.deliver_write(gpu_, packet.payload_bytes, tagged ? packet.cookie : 0);
}

}  // namespace moehub
