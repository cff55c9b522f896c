#pragma once
// The interface every fidelity implements (ASTRA-sim style: a small seam between the systems
// layer and the network). Systems and platform ports see only this: bulk transfers, transfers
// with explicit packetisation, and messages (single writes or read requests and responses,
// with back-pressure, delivered to the destination GPU's receiver). `make_network` picks the
// fidelity from net.fidelity; a study may bring its own (NetworkFactory).

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "net/net_config.h"
#include "net/packet.h"
#include "sim/callback.h"
#include "sim/per_gpu.h"
#include "sim/simulator.h"
#include "sim/trace_recorder.h"

namespace moehub {

// How a stream's packets are cut and when it counts as complete. A network without packets
// carries the stream's bytes as it carries a transfer.
struct StreamOptions {
  uint32_t packet_payload = 0;  // 0: net.max_payload_bytes
  PacketKind kind = PacketKind::Write;
  bool complete_on_ack = false;  // wait for every ack (a put followed by a quiet)
};

class Network {
 public:
  virtual ~Network() = default;

  // --- Bulk data ---
  // Moves `bytes` of payload from GPU src to GPU dst as writes (a copy engine / NCCL CTA
  // stream of max-size packets). `on_complete` runs when the destination has accepted the
  // last byte. src == dst or bytes == 0 complete at the current time without using the fabric.
  virtual void transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) = 0;
  // A transfer with explicit packet size, kind and completion rule (thread-block puts).
  virtual void stream(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                      Callback on_complete) = 0;
  // A stream whose source also hears when it has handed its last byte to the network
  // (`on_sent`, before `on_complete`): an SM's copy loop has issued its last store, though the
  // bytes may still wait at the source. Packet fidelity: the last packet entered the egress
  // FIFO; flow fidelity (no queues): the payload has left. This default, for a network that
  // cannot tell, reports the hand-over with the completion.
  virtual void stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                           Callback on_sent, Callback on_complete);

  // --- Messages ---
  // The receiver that takes GPU `gpu`'s arriving messages (and, at packet fidelity, the packets
  // of transfers); null: accept everything at arrival.
  virtual void set_receiver(int gpu, PacketReceiver* receiver) = 0;
  // The most payload one message may carry: a packet's, or 4 GiB where a message is a flow.
  virtual uint64_t message_limit() const = 0;
  // The same for a message from `src` to `dst`, where a path's packets differ (at packet
  // fidelity an RDMA MTU across nodes, an NVLink packet inside one).
  virtual uint64_t message_limit_to(int src, int dst) const {
    (void)src;
    (void)dst;
    return message_limit();
  }
  // True if GPU `gpu` can send a message of `kind` with that payload now.
  virtual bool can_send(int gpu, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const = 0;
  // The same for a message to `dst`: a network whose room differs by path (the flow model's
  // NVLink and NIC windows) answers for that path; the others as can_send.
  virtual bool can_send_to(int src, int dst, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const {
    (void)dst;
    return can_send(src, payload_bytes, kind);
  }
  // True if a message of that payload to some destination would be accepted now.
  virtual bool can_send_any(int src, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const {
    return can_send(src, payload_bytes, kind);
  }
  // Sends packet.src -> packet.dst; the destination's receiver gets it on arrival.
  // Precondition: can_send (else std::logic_error).
  virtual void send(Packet&& packet) = 0;
  // Calls listener->on_room(gpu) once, the next time GPU `gpu` can send a request-class
  // (request_room) or response-class (request_response_room) message again.
  virtual void request_room(int gpu, RoomListener* listener) = 0;
  virtual void request_response_room(int gpu, RoomListener* listener) = 0;
  // The same for the path src -> dst (a request-class message).
  virtual void request_room_to(int src, int dst, RoomListener* listener) {
    (void)dst;
    request_room(src, listener);
  }
  // A receiver that refused a message (PacketReceiver::can_accept) calls this when it can
  // accept again.
  virtual void resume_ingress(int gpu) = 0;

  // Per-link and per-port statistics (units in key names).
  virtual nlohmann::json stats() const = 0;
  // Writes coalesced link-busy spans recorded so far to the trace (if tracing is on).
  virtual void flush_trace() {}
  // After a run has drained: what the model's conservation laws say went wrong (every packet
  // injected delivered once, every buffer empty, every credit returned); empty if nothing.
  virtual std::vector<std::string> conservation_violations() const { return {}; }

  virtual const NetConfig& config() const = 0;
};

// A network that carries every message as a transfer of its payload (no packets, no buffers:
// a message can always be sent, and reaches the destination's receiver when its transfer
// completes; receivers are not asked whether they accept). The flow model is one; so is any
// study's network that models only transfers.
class TransferNetwork : public Network {
 public:
  explicit TransferNetwork(Simulator& sim, int gpus) : sim_(sim), receivers_(gpus, nullptr) {}

  void stream(int src, int dst, uint64_t bytes, int priority, const StreamOptions&, Callback on_complete) override {
    transfer(src, dst, bytes, priority, std::move(on_complete));
  }
  void set_receiver(int gpu, PacketReceiver* receiver) override { receivers_.at(gpu) = receiver; }
  // A message is one flow; its payload field is 32 bits wide.
  uint64_t message_limit() const override { return UINT32_MAX; }
  bool can_send(int, uint32_t, PacketKind = PacketKind::Write) const override { return true; }
  void send(Packet&& packet) override;
  void request_room(int gpu, RoomListener* listener) override;
  void request_response_room(int gpu, RoomListener* listener) override { request_room(gpu, listener); }
  void resume_ingress(int) override {}

 protected:
  // Hands an arrived message to its destination's receiver (if any).
  void deliver(Packet&& packet);
  // Offers a batch of messages to one destination to its receiver at once (deliver_batch);
  // false if there is none or it declines.
  bool deliver_together(std::span<const Packet> packets);

 private:
  Simulator& sim_;
  PerGpu<PacketReceiver*> receivers_;
};

std::unique_ptr<Network> make_network(const NetConfig& config, Simulator& sim, TraceRecorder* trace = nullptr);

// What builds a cluster's network: make_network by default; a test or a study may put another
// implementation of this interface under the systems (tests/systems/toy_network_test.cpp).
using NetworkFactory = std::function<std::unique_ptr<Network>(const NetConfig&, Simulator&, TraceRecorder*)>;

}  // namespace moehub
