#pragma once
// The scale-out fabric at packet fidelity (net.fidelity = "packet" with nodes joined by NICs;
// PacketNetwork hands it every packet between nodes). A packet crosses the links
// FabricTopology routes it over, as the flow fidelity loads them: the source GPU's PCIe link to
// its NIC (payload bytes), the NIC's port (wire bytes: payload plus net.rdma_header_bytes per
// packet of at most net.rdma_mtu_bytes; a start waits for the NIC's message engine, one packet
// per 1 / net.nic_message_rate), the leaf, between leaves a leaf-spine and a spine-leaf link
// (the spine ECMP picks per pair), the far NIC's port and its PCIe link down to the GPU.
//
// Links forward cut-through (InfiniBand switches do): a packet may start on the next link one
// hop latency after it started on the last, and ends no earlier than its tail arrives, so an
// unloaded packet takes the flow model's tail (slowest serialisation plus every latency). Each
// link serves one FIFO in arrival order. With net.fabric_port_buffer > 0 the input buffer at the
// far end of every NIC-leaf, leaf-spine, spine-leaf and leaf-NIC link is bounded by link-level
// credits, as InfiniBand's are (IBTA vol. 1, 7.9): a packet starts on such a link only while that
// buffer has room for its wire bytes, holds them until its tail has left on its next link (or,
// at the last, until it has arrived) and the room is back at the sender one cable latency later
// (the credit update's trip). A full buffer stops its link, whose waiting packets then hold the
// buffer behind them: congestion spreads back to the sources, as in a lossless fabric. Without
// it (0) the fabric's buffers are unbounded. In both, what is in
// flight is bounded at the source, as the flow fidelity bounds it: a message waits for its
// queue pair's window (net.nic_send_queue_depth, SendWindows), and a NIC fetches a packet over
// PCIe only while what it fetched and has not yet sent fits its read pipeline (the port's
// bandwidth over the PCIe and NIC latencies, plus one MTU packet: the least that keeps the port
// busy). The NIC serves its queue pairs (one per destination GPU) round-robin, a packet at a
// time; a queue pair's work requests (transfers, messages) in order.
//
// The destination NIC acks every write (net.write_ack) with a header-only packet over the
// reverse route (NIC port to NIC port); the sender hears of it one PCIe latency after it
// arrives. A receiver that refuses a request-class packet holds it, and every request-class
// packet that arrives after it, until resume_ingress.

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "net/fabric_topology.h"
#include "net/link_stats.h"
#include "net/network.h"
#include "sim/slab.h"
#include "net/send_windows.h"
#include "sim/per_gpu.h"

namespace moehub {

class ScaleOutPackets final : public PacketClient {
 public:
  // Precondition: config.scale_out().
  ScaleOutPackets(const NetConfig& config, Simulator& sim, TraceRecorder* trace);

  bool crosses(int src, int dst) const { return !topo_.same_node(src, dst); }
  // The queue pair src -> dst has room for a message. A read response takes no slot: the
  // responder's NIC makes it (IBTA responder resources), it is not a work request on the
  // responder's send queue; counting it let two GPUs that read each other fill each other's
  // windows with requests their receivers held (a deadlock, ccfuser at 4096 tokens on 2 nodes).
  bool can_send(int src, int dst, PacketKind kind) const {
    return traffic_class(kind) == TrafficClass::Response || windows_.can_send(src, dst, 0, kind);
  }
  bool can_send_any(int src) const;
  // Calls listener->on_room(src) once, when some queue pair of src opens (at once if src -> dst
  // is open now).
  void wait_room(int src, int dst, RoomListener* listener);
  // A message: one packet (payload at most net.rdma_mtu_bytes). Taken even if its window is
  // full (a sender that asked only can_send(gpu)); it then counts beyond the window. Read
  // responses are not counted (can_send).
  void send(Packet&& packet);
  // Bulk data: one work request cut into packets of options.packet_payload (0: the MTU; at most
  // the MTU). Not windowed (as at flow fidelity).
  void transfer(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options, Callback on_complete);
  void set_receiver(int gpu, PacketReceiver* receiver) { receivers_.at(gpu) = receiver; }
  void resume_ingress(int gpu);

  // The fabric's links after the NVLink ones, and the RDMA totals (keys as at flow fidelity).
  void stats(nlohmann::json& links, nlohmann::json& out, Time elapsed) const;
  void flush_trace();
  void conservation_violations(std::vector<std::string>& out) const;
  const FabricTopology& topology() const { return topo_; }
  uint64_t packets_delivered() const { return delivered_; }

  // Transfers' bookkeeping (this is the client of their packets).
  void on_delivered(const Packet& p) override;
  void on_ack(const Packet& p) override;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr int kMaxHops = 6;
  struct Flight {
    Packet pkt;
    int64_t ready_ps = 0;  // its head may start on the link it waits for
    int64_t tail_ps = 0;   // its tail reaches that link (cut-through: it cannot end before)
    uint32_t next = kNil;
    uint32_t wire = 0;     // bytes on a NIC port or fabric link
    uint32_t links[kMaxHops] = {};
    uint8_t hop = 0;
    uint8_t hops = 0;
    bool windowed = false;  // a request-class message: its queue pair's slot is released at delivery
  };
  struct Queue {
    uint32_t head = kNil;
    uint32_t tail = kNil;
    bool empty() const { return head == kNil; }
  };
  struct Link {
    Queue q;
    Time busy_until;
    int64_t wake_at = INT64_MAX;
    Time after;    // latency from starting on this link to the head's arrival at the next
    Bandwidth rate;
    bool payload_only = false;  // PCIe carries the payload (GPUDirect), not the fabric headers
    bool credited = false;      // its far end's input buffer is bounded (net.fabric_port_buffer)
    bool starved = false;       // its head packet waits for room there
    uint64_t room = 0;          // credited: free bytes in that buffer, as the sender knows them
    Time starved_since;
    LinkStats stats;
  };
  // A work request on a queue pair: a transfer's remaining bytes, or one message.
  struct WorkRequest {
    uint64_t bytes = 0;
    uint64_t cut = 0;
    uint32_t packet_payload = 0;
    uint32_t transfer = kNil;
    bool windowed = false;  // a request-class message: it holds a queue pair slot until delivered
    Packet packet;  // the message, or the transfer's packets' fields
  };
  struct Nic {
    std::vector<int> active;  // destinations with work, in the order they got it
    size_t next = 0;
    uint64_t fetched = 0;     // wire bytes fetched over PCIe, not yet started on the port
    Time engine_free;         // the message engine takes the next packet
  };
  struct Transfer {
    uint64_t bytes = 0;
    uint64_t done = 0;
    uint32_t packet_payload = 0;
    bool complete_on_ack = false;
    Callback on_complete;
  };

  uint32_t alloc();
  void push(Queue& q, uint32_t id);
  uint32_t pop(Queue& q);
  void free_slot(uint32_t id);
  void enqueue_work(int src, int dst, WorkRequest&& wr);
  void pump_source(int gpu);
  void cut_packet(int src, int dst, WorkRequest& wr);
  // Puts the flight on its next link's queue, or schedules its arrival after the last.
  void forward(uint32_t id, Time head, Time tail);
  void schedule_link(uint32_t link, Time at);
  void on_link(uint32_t link);
  // The packet's wire bytes leave the buffer at the far end of `link` at `left`; the sender
  // hears of the room one cable latency later.
  void return_credit(uint32_t link, uint32_t bytes, Time left);
  void on_arrival(uint32_t id);
  void deliver(uint32_t id);
  void send_ack(const Packet& p, Time at);
  void progress(uint32_t transfer, uint64_t bytes);
  int link_pid(uint32_t link) const;
  std::string link_track(uint32_t link) const;

  NetConfig cfg_;
  Simulator& sim_;
  TraceRecorder* trace_;
  FabricTopology topo_;
  SendWindows windows_;
  Time per_packet_;     // the message engine's time per packet
  uint64_t pipeline_;   // the NIC's read pipeline, wire bytes
  Time coalesce_;       // trace spans: gaps under one MTU packet's port time merge
  std::vector<Flight> pool_;
  std::vector<uint32_t> free_;
  std::vector<Link> links_;  // indexed as FabricTopology::links(); the message engines' stay idle
  PerGpu<Nic> nics_;
  PerPair<std::deque<WorkRequest>> qps_;
  Slab<Transfer> transfers_;
  PerGpu<PacketReceiver*> receivers_;
  PerGpu<std::deque<uint32_t>> refused_;  // request-class packets held for the receiver
  uint64_t injected_ = 0;
  uint64_t delivered_ = 0;
  uint64_t rdma_payload_bytes_ = 0;
  uint64_t rdma_messages_ = 0;
  uint64_t rdma_packets_ = 0;
  uint64_t acks_ = 0;
  uint64_t credit_stalls_ = 0;  // a link's head packet found no room at its far end
  Time credit_wait_;            // summed over links, while they waited for room
};

}  // namespace moehub
