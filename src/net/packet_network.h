#pragma once
// The packet-level NVLink/NVSwitch fabric (with nodes joined by NICs, each node's NVLink domain;
// packets between nodes go to ScaleOutPackets, src/net/scaleout_packet.h). Every GPU has one egress port whose FIFO (per
// traffic class) is shared by all destinations and feeds links to S switch planes; every plane
// is an input-queued switch with virtual output queues; every GPU has an ingress buffer per
// plane link. All buffers are finite and guarded by credits, so a congested destination fills
// the switch buffers, the senders run out of credits, and the packet at the head of a shared
// egress FIFO blocks the packets behind it, whatever their destination.
//
// Hot path: packets live in a reused pool and move between intrusive queues; a GPU's egress
// costs one event per packet only while it has a backlog; a switch output grants up to one link
// latency ahead per event (see arbitrate); credits return without events (DelayedCredits).

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "net/delayed_credits.h"
#include "net/link_stats.h"
#include "net/network.h"
#include "net/packet.h"
#include "sim/per_gpu.h"

namespace moehub {

class TransferEngine;
class ScaleOutPackets;

class PacketNetwork final : public Network {
 public:
  PacketNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace = nullptr);
  ~PacketNetwork() override;

  // --- Messages: one packet each ---
  // True if GPU `gpu`'s egress FIFO for `kind`'s traffic class has room for the packet now.
  bool can_send(int gpu, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override;
  // Queues the packet at packet.src's egress. Precondition: can_send (else std::logic_error).
  void send(Packet&& packet) override;
  uint64_t message_limit() const override { return cfg_.max_payload_bytes; }
  uint64_t message_limit_to(int src, int dst) const override {
    return crosses(src, dst) ? cfg_.rdma_mtu_bytes : cfg_.max_payload_bytes;
  }
  // Room: the next time a packet leaves that GPU's request (response) FIFO.
  void request_room(int gpu, RoomListener* listener) override;
  void request_response_room(int gpu, RoomListener* listener) override;
  // Between nodes (a scale-out fabric): the queue pair's window (ScaleOutPackets); else as above.
  bool can_send_to(int src, int dst, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override;
  bool can_send_any(int src, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override;
  void request_room_to(int src, int dst, RoomListener* listener) override;
  void set_receiver(int gpu, PacketReceiver* receiver) override;
  void resume_ingress(int gpu) override;

  // --- Bulk data, cut into packets ---
  void transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) override;
  void stream(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
              Callback on_complete) override;
  // `on_sent` runs when the stream's last packet enters the egress FIFO.
  void stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options, Callback on_sent,
                   Callback on_complete) override;

  nlohmann::json stats() const override;
  void flush_trace() override;
  std::vector<std::string> conservation_violations() const override;
  const NetConfig& config() const override { return cfg_; }

  uint64_t packets_delivered() const { return delivered_packets_; }

  // Switch outputs grant up to one link latency ahead per event (on by default). Off: one event
  // per grant, at the grant's time, as before 2026-12-03; the grants are the same, the order of
  // same-picosecond events is not. For tests and for checking a result's sensitivity to it.
  void set_grant_lookahead(bool on) { lookahead_ = on ? link_latency_ : Time::zero(); }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  // One cache line per packet: unaligned, most slots straddled two lines, and reading a queue's
  // head (its time, then its kind) missed the cache twice.
  struct alignas(64) Slot {
    Packet pkt;
    int64_t ready_ps = 0;  // when it may leave the queue it sits in
    uint32_t next = kNil;
    uint16_t flits = 0;
    uint8_t plane = 0;
    uint8_t tc = 0;
  };
  struct Queue {
    uint32_t head = kNil;
    uint32_t tail = kNil;
    uint32_t flits = 0;
    int64_t wake_at = INT64_MAX;  // ingress queues: earliest pending delivery event
    bool empty() const { return head == kNil; }
  };
  struct Uplink {  // GPU g -> plane s
    Time busy_until;
    DelayedCredits credits;  // toward the switch input buffer
    // While the egress head of a class is blocked on these credits (the link idle): the flits
    // it needs; 0 otherwise.
    uint16_t need[2] = {0, 0};
    bool waiting() const { return (need[0] | need[1]) != 0; }
    void stop_waiting() { need[0] = need[1] = 0; }
    LinkStats stats;
  };
  struct Output {  // plane s -> GPU d
    Time busy_until;
    DelayedCredits credits;  // toward the GPU ingress buffer
    uint32_t rr = 0;         // last input granted
    uint32_t pending = 0;    // packets in this output's virtual output queues
    uint64_t occupied[2] = {0, 0};  // per class: bit i set if input i's VOQ is not empty
    uint64_t prioritized[2] = {0, 0};  // per class: bit i set if that VOQ's head has priority > 0
    int64_t wake_at = INT64_MAX;
    bool waiting = false;
    LinkStats stats;
  };
  struct Port {  // per GPU
    int64_t wake_at = INT64_MAX;  // the pending wake event's time (INT64_MAX: none)
    EventHandle wake;
    bool pumping = false;
    bool repump = false;
    bool ack_room_wanted = false;
    bool planes_stalled = false;  // some uplink of this GPU is stalled for the egress head
    uint32_t peak_flits = 0;
    uint64_t injected = 0;
    uint64_t delivered = 0;
    std::vector<RoomListener*> listeners;
    std::vector<RoomListener*> notifying;
    std::vector<RoomListener*> response_listeners;
    PacketReceiver* receiver = nullptr;
  };
  enum Blocked : uint8_t { kFree = 0, kByReceiver = 1, kByAckRoom = 2 };

  uint32_t alloc_slot();
  void push(Queue& q, uint32_t id);
  uint32_t pop(Queue& q);

  void pump(int gpu);
  bool send_head(int gpu, int tc, Time& wake);
  void send_on_uplink(int gpu, int tc);
  // The egress wakes at the time its last pump found that something may leave (`exact`: that
  // time replaces a pending wake, earlier or later), or by `at` for a credit returning to a
  // stalled uplink.
  void schedule_egress_wake(int gpu, Time at, bool exact = false);
  void on_egress_wake(int gpu);
  void arbitrate(uint32_t output);
  bool grant(uint32_t output, Time t, int64_t& earliest);
  // `now`: the grant's time, which may lie up to one link latency after the simulator's.
  void send_on_downlink(uint32_t output, int tc, uint32_t input, Time now);
  void schedule_output_wake(uint32_t output, Time at);
  void on_output_wake(uint32_t output);
  void on_ingress(int gpu, int plane, int tc);
  void schedule_ingress_wake(int gpu, int plane, int tc, Time at);
  void retire_ack(int gpu, uint32_t id);
  Packet release(uint32_t id);  // moves the packet out of its slot and frees the slot
  void count_delivered(int gpu, PacketKind kind);
  void retry_ingress(int gpu, Blocked reason);

  // GPU gpu's link to switch plane `plane` (uplinks_, ingress_blocked_).
  size_t link_index(int gpu, uint32_t plane) const { return static_cast<size_t>(gpu) * s_ + plane; }
  Queue& egress(int gpu, int tc) { return egress_[static_cast<size_t>(gpu) * 2 + static_cast<size_t>(tc)]; }
  // VOQs are laid out by output link, then class, then input: one arbitration scans one run.
  size_t voq_index(uint32_t output, int tc, uint32_t in) const {
    return (static_cast<size_t>(output) * 2 + static_cast<size_t>(tc)) * n_ + in;
  }
  void push_voq(uint32_t output, int tc, uint32_t in, uint32_t id);
  uint32_t pop_voq(uint32_t output, int tc, uint32_t in);
  void set_voq_head(Output& o, int tc, uint32_t in, size_t index);
  Queue& ingress(int gpu, int plane, int tc) {
    return ingress_[link_index(gpu, static_cast<uint32_t>(plane)) * 2 + static_cast<size_t>(tc)];
  }

  NetConfig cfg_;
  Simulator& sim_;
  TraceRecorder* trace_;
  uint32_t n_;
  uint32_t s_;
  uint32_t egress_cap_[2];
  uint32_t ack_flits_;
  Time link_latency_;
  Time lookahead_;  // how far ahead of now an output may grant (see arbitrate)
  Time hop_to_output_;  // link latency + switch traversal
  Time coalesce_;
  std::vector<Time> ser_;  // serialisation time per flit count on one plane link

  std::vector<Slot> pool_;
  static_assert(sizeof(Slot) == 64, "a packet slot is one cache line");
  uint32_t free_head_ = kNil;
  std::vector<Queue> egress_;
  PerPair<uint8_t> next_plane_;  // round-robin spreading
  std::vector<Uplink> uplinks_;
  std::vector<Queue> voq_;
  // A copy of each VOQ's head packet's arbitration fields (valid while the VOQ is not empty),
  // so that arbitration reads one contiguous array instead of chasing pool slots.
  struct VoqHead {
    int64_t ready_ps;
    uint32_t flits;
    uint32_t priority;
  };
  std::vector<VoqHead> voq_head_;
  std::vector<Output> outputs_;
  std::vector<Queue> ingress_;
  std::vector<uint8_t> ingress_blocked_;
  PerGpu<Port> ports_;
  std::unique_ptr<TransferEngine> engine_;
  // Packets between nodes (null without a scale-out fabric); NVLink carries those within one.
  std::unique_ptr<ScaleOutPackets> fabric_;
  bool crosses(int src, int dst) const;
  uint64_t injected_packets_ = 0;
  uint64_t delivered_packets_ = 0;
  uint64_t acks_delivered_ = 0;
  uint64_t delivered_by_kind_[6] = {0, 0, 0, 0, 0, 0};  // indexed by PacketKind
};

}  // namespace moehub
