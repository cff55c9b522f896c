#include "net/network.h"

#include "net/flow_network.h"
#include "net/packet_network.h"

namespace moehub {

void Network::stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                          Callback on_sent, Callback on_complete) {
  stream(src, dst, bytes, priority, options, [sent = std::move(on_sent), done = std::move(on_complete)]() mutable {
    sent();
    done();
  });
}

void TransferNetwork::send(Packet&& packet) {
  const int src = packet.src;
  const int dst = packet.dst;
  const uint64_t bytes = packet.payload_bytes;
  const int priority = packet.priority;
  transfer(src, dst, bytes, priority, [this, p = std::move(packet)]() mutable { deliver(std::move(p)); });
}

void TransferNetwork::deliver(Packet&& packet) {
  if (PacketReceiver* r = receivers_.at(packet.dst)) r->deliver(std::move(packet));
}

bool TransferNetwork::deliver_together(std::span<const Packet> packets) {
  PacketReceiver* r = packets.empty() ? nullptr : receivers_.at(packets.front().dst);
  return r && r->deliver_batch(packets);
}

void TransferNetwork::request_room(int gpu, RoomListener* listener) {
  // A message can always be sent; a caller that asks anyway hears back at once.
  sim_.schedule_in(Time::zero(), [gpu, listener] { listener->on_room(gpu); });
}

std::unique_ptr<Network> make_network(const NetConfig& config, Simulator& sim, TraceRecorder* trace) {
  if (config.fidelity == NetFidelity::Flow) return std::make_unique<FlowNetwork>(config, sim, trace);
  return std::make_unique<PacketNetwork>(config, sim, trace);
}

}  // namespace moehub
