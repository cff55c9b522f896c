#pragma once
// The transfer-level interface both fidelities implement (ASTRA-sim style: a small seam between
// the systems layer and the network). `make_network` picks the fidelity from net.fidelity.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "net/net_config.h"
#include "sim/callback.h"
#include "sim/simulator.h"
#include "sim/trace_recorder.h"

namespace moehub {

class PacketNetwork;

class Network {
 public:
  virtual ~Network() = default;

  // Moves `bytes` of payload from GPU src to GPU dst as writes (a copy engine / NCCL CTA
  // stream of max-size packets). `on_complete` runs when the destination has accepted the
  // last byte. src == dst or bytes == 0 complete at the current time without using the fabric.
  virtual void transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) = 0;

  // Per-link and per-port statistics (units in key names).
  virtual nlohmann::json stats() const = 0;
  // Writes coalesced link-busy spans recorded so far to the trace (if tracing is on).
  virtual void flush_trace() {}

  virtual const NetConfig& config() const = 0;
  // The packet-level interface, or null in the flow fidelity.
  virtual PacketNetwork* packets() { return nullptr; }
};

std::unique_ptr<Network> make_network(const NetConfig& config, Simulator& sim, TraceRecorder* trace = nullptr);

// What builds a cluster's network: make_network by default; a test or a study may put another
// implementation of this interface under the systems (tests/systems/toy_network_test.cpp).
using NetworkFactory = std::function<std::unique_ptr<Network>(const NetConfig&, Simulator&, TraceRecorder*)>;

}  // namespace moehub
