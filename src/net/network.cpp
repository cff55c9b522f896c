#include "net/network.h"

#include "net/flow_network.h"
#include "net/packet_network.h"

namespace moehub {

std::unique_ptr<Network> make_network(const NetConfig& config, Simulator& sim, TraceRecorder* trace) {
  if (config.fidelity == NetFidelity::Flow) return std::make_unique<FlowNetwork>(config, sim, trace);
  return std::make_unique<PacketNetwork>(config, sim, trace);
}

}  // namespace moehub
