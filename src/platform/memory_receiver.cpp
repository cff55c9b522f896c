#include "platform/memory_receiver.h"

#include "platform/cluster.h"

namespace moehub {

void MemoryReceiver::deliver(Packet&& packet) {
  if (!is_write(packet.kind)) return;
  // Only thread-block stores carry a signal tag in their cookie; transfers (NCCL collectives,
  // copy-engine streams) use the cookie for their own bookkeeping.
  const bool store = packet.client != nullptr && packet.client->cookie_is_for_receiver();
  cluster_.deliver_write(gpu_, packet.payload_bytes, store ? packet.cookie : 0);
}

}  // namespace moehub
