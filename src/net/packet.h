#pragma once
// What crosses the NVLink fabric, and the interfaces through which upper layers send packets,
// receive them, and hear about acknowledgements and buffer room.

#include <cstdint>
#include <span>

namespace moehub {

enum class PacketKind : uint8_t { Write, Ack, ReadRequest, ReadResponse, RowSparseWrite, Flag };

const char* packet_kind_name(PacketKind k);

// Requests and responses travel in separate traffic classes with separate buffer space, so
// that a response (which the receiver must always be able to sink) never waits behind a
// request: the classic cure for protocol deadlock.
enum class TrafficClass : uint8_t { Request = 0, Response = 1 };
constexpr TrafficClass traffic_class(PacketKind k) {
  return k == PacketKind::Ack || k == PacketKind::ReadResponse ? TrafficClass::Response : TrafficClass::Request;
}
// Kinds that write the destination's memory; these are acknowledged when net.write_ack is on.
constexpr bool is_write(PacketKind k) {
  return k == PacketKind::Write || k == PacketKind::RowSparseWrite || k == PacketKind::Flag;
}

class PacketClient;

struct Packet {
  int32_t src = 0;
  int32_t dst = 0;
  uint32_t payload_bytes = 0;
  PacketKind kind = PacketKind::Write;
  // Higher wins at switch output arbitration (ties: round-robin over inputs).
  uint8_t priority = 0;
  // A write's sender acts on its ack when the ack arrives (a fence, a completion). When false,
  // the ack still crosses the fabric (link time, buffers, credits, arbitration) but nothing
  // waits for it at the sender: the network retires it when the last switch grants it its
  // final link, without a delivery event, and reports it to on_ack() then (switch outputs grant
  // up to one link latency ahead, so that call may come before the grant's time: count, do not
  // read the clock). An ack copies its write's flag.
  bool ack_awaited : 1 = true;
  // Flow fidelity with net.flow_batch_bytes: the message may join a queued message of its flow
  // and arrive with it (the sender needs no per-message timing: MoE-Hub's lines). Ignored by
  // the packet model.
  // kFlowBatchStore: the same under net.flow_store_batch_bytes (a thread block's store through the
  // GPU store port). Bit-fields, not whole bytes: a packet slot of the packet model is one cache line.
  uint8_t flow_batch : 2 = kFlowBatchNone;
  static constexpr uint8_t kFlowBatchNone = 0, kFlowBatchLine = 1, kFlowBatchStore = 2;
  // Flow fidelity with hub.flow_line_runs (a stated reduction): the message stands for this many
  // equal messages of payload_bytes / messages each, sent back to back (a hub's run of lines):
  // each counts in its path's window and the RDMA counters, and its class is theirs. Ignored
  // (must be 1) at packet fidelity. At most 255 (the field; a run is at most one flow batch).
  uint8_t messages = 1;
  // Opaque to the network; an ack carries the cookie of the write it acknowledges.
  uint64_t cookie = 0;
  // The sender-side owner told about delivery and acks (non-owning; may be null).
  PacketClient* client = nullptr;
  // What the packet's header and byte enables carry for the receiver (the hub: the store's
  // encoded destination and the line's validity mask). Opaque to the network; it travels in
  // the packet rather than in a side table the receiver would have to look up.
  uint64_t header = 0;
  uint64_t byte_mask = 0;
};

// Sender side: hears about its packets. Calls come from inside the network's events.
class PacketClient {
 public:
  virtual ~PacketClient() = default;
  // The destination's receiver accepted the packet (simulator bookkeeping: the sender itself
  // learns of it only through an ack).
  virtual void on_delivered(const Packet&) {}
  // An ack for one of this client's writes arrived back at the sender; `ack.cookie` is the
  // write's cookie, `ack.src` the GPU that received the write. For writes sent with
  // `ack_awaited = false` the call comes when the last switch sends the ack on its final link (counters only).
  virtual void on_ack(const Packet&) {}
  // True if the receiving side should read this client's write cookies (e.g. thread-block
  // stores tag each write with the signal it feeds); otherwise the cookie is the sender's own
  // bookkeeping. A flag rather than a virtual call or a cast: it is asked once per packet.
  bool cookie_is_for_receiver() const { return cookie_is_for_receiver_; }

 protected:
  PacketClient() = default;
  explicit PacketClient(bool cookie_is_for_receiver) : cookie_is_for_receiver_(cookie_is_for_receiver) {}

 private:
  bool cookie_is_for_receiver_ = false;
};

// Destination side: one per GPU (the GPU memory model, or the hub's AAU/DAM in front of it).
class PacketReceiver {
 public:
  virtual ~PacketReceiver() = default;
  // Asked before delivering a request-class packet. Returning false keeps it (and every packet
  // behind it on that link) in the ingress buffer, holding its credits, until the receiver
  // calls PacketNetwork::resume_ingress(gpu). Response-class packets are always accepted.
  virtual bool can_accept(const Packet&) { return true; }
  virtual void deliver(Packet&& packet) = 0;
  // Flow batches (net.flow_batch_bytes): a receiver may take a batch's messages together, in
  // order (true: the network frees their window room after all of them), or leave them to
  // deliver() one by one, each followed by its room (false, the default).
  virtual bool deliver_batch(std::span<const Packet> packets) {
    (void)packets;
    return false;
  }
};

// Told once when a GPU's egress FIFO has room again after an injection was refused.
class RoomListener {
 public:
  virtual ~RoomListener() = default;
  virtual void on_room(int gpu) = 0;
};

}  // namespace moehub
