#pragma once
// The flow fidelity: every transfer is a fluid flow; rates are max-min fair over the same
// links as the packet model. Because packets spread evenly over the planes, a GPU's S links
// in one direction act as one resource of the GPU's per-direction bandwidth. A flow loads its
// source's egress and its destination's ingress by its wire bytes (payload plus headers, in
// max-size packets) and, with write acks on, the reverse direction by one ack per packet.
// There are no queues: no head-of-line blocking, no buffer limits, no priorities. A message
// (a thread block's store, a hub packet, a read response) is one flow; a header-only message
// (a read request) is none: it arrives after its header's unloaded trip on its path. With
// net.flow_merge_pairs the messages of one class are one flow instead, served in start order, so
// rates change only when a class starts or drains, not at every message. With
// net.flow_realloc_interval (a stated reduction) a component is filled again at most once per
// interval; changes in between refill only the newly formed classes over the spare capacity.
// With net.flow_realloc_per_class (a stated reduction) that wait is at least so much per class
// the last full allocation filled.
// With net.flow_batch_bytes (a stated reduction) messages marked Packet::flow_batch join the
// class's last queued member up to that many bytes and are delivered together; the same for
// Packet::kFlowBatchStore under net.flow_store_batch_bytes.
// Messages are back-pressured (SendWindows): a sender hands the network a message only while
// its outstanding messages on that path fit the window of the real link's buffers or queue.
// With a scale-out fabric (net.gpus_per_node > 0) a flow between nodes loads instead its route
// through the fat tree (FabricTopology): the source NIC's message engine by its MTU packets,
// both PCIe links by its payload, both NIC ports and any leaf-spine links by its wire bytes.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/fabric_topology.h"
#include "net/network.h"
#include "net/send_windows.h"
#include "sim/slab.h"

namespace moehub {

class FlowNetwork final : public TransferNetwork {
 public:
  FlowNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace = nullptr);

  void transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) override;
  // `on_sent` runs when the payload has left (a flow has no queue at its source).
  void stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options, Callback on_sent,
                   Callback on_complete) override;
  nlohmann::json stats() const override;
  void flush_trace() override;
  std::vector<std::string> conservation_violations() const override {
    for (const FlowClass& c : classes_) {
      if (c.live && !c.members.empty()) return {"a flow is still in progress after the run drained"};
    }
    if (!windows_.idle()) return {"a message is still outstanding in a send window after the run drained"};
    if (!sent_.empty()) return {"a stream's hand-over is still pending after the run drained"};
    return {};
  }
  // Messages: back-pressured by the path's window (SendWindows); can_send without a
  // destination asks the NVLink window.
  bool can_send(int gpu, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override {
    return windows_.can_send(gpu, gpu, payload_bytes, kind);
  }
  bool can_send_to(int src, int dst, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override {
    return windows_.can_send(src, dst, payload_bytes, kind);
  }
  bool can_send_any(int src, uint32_t payload_bytes, PacketKind kind = PacketKind::Write) const override {
    return windows_.can_send_any(src, payload_bytes, kind);
  }
  void send(Packet&& packet) override;
  void request_room(int gpu, RoomListener* listener) override { wait_room(gpu, gpu, PacketKind::Write, listener); }
  void request_response_room(int gpu, RoomListener* listener) override {
    wait_room(gpu, gpu, PacketKind::ReadResponse, listener);
  }
  void request_room_to(int src, int dst, RoomListener* listener) override {
    wait_room(src, dst, PacketKind::Write, listener);
  }
  const NetConfig& config() const override { return cfg_; }

  // Current payload rate of every active flow (bytes/s), in start order; for tests.
  std::vector<double> rates();

 private:
  // Flows with the same endpoints and the same wire and ack bytes per payload byte get the same
  // max-min rate, so they are allocated as one class: a progressive filling over classes, not
  // flows (a hub packet is one small flow each, and thousands are in flight at once). Members
  // of a class progress together: the class counts the payload each member has received
  // (`served_at`), and a member is done when that reaches its `finish`. Each class's next
  // completion time sits in a heap (due_), so an event reads only the classes due then.
  static constexpr int64_t kNever = INT64_MAX;
  static constexpr uint32_t kNoBatch = UINT32_MAX;
  struct Member {
    double finish = 0;  // the class's `served` at which this flow's payload has left
    uint64_t seq = 0;   // start order: completions at one instant are reported in it
    Time tail;          // from the payload's departure to completion (the last packet's trip)
    uint32_t batch = kNoBatch;  // net.flow_batch_bytes: the batch of messages it carries
    Callback on_complete;
  };
  // A resource a class loads, and by how much per payload byte.
  struct Load {
    uint32_t resource = 0;
    double per_byte = 0;
  };
  // A class on a resource's list (res_classes_), and by how much it loads it per payload byte:
  // the allocation sums a resource's weight and load over its list without visiting the classes.
  struct OnResource {
    uint32_t slot = 0;
    double per_byte = 0;
  };
  // Fields the allocation and the completion heap read at every change come first, in one
  // cache line (apply_rates and set_due visit tens of thousands of classes per allocation).
  struct FlowClass {
    double rate = 0;  // payload bytes per second, per member
    // The payload each member has received is served_base at since_ps, then grows at `rate`:
    // it is brought up to date only when the rate changes, not at every event.
    double served_base = 0;
    int64_t since_ps = 0;
    double next_finish = 0;       // members.front().finish
    int64_t due_ps = kNever;      // when the front member's payload has left
    uint64_t due_key = 0;         // the key of the class's current entry in due_
    uint64_t formed = 0;          // formation order: the allocation's order within a component
    bool live = false;            // false: a free slot
    // A min-heap on (finish, seq); merged, a queue in start order (which is that heap's order).
    // A deque: thousands of hub packets may wait in one class, and a vector's doubling held up
    // to three times their size at its peak (heaptrack, session 21).
    std::deque<Member> members;
    double last_finish = 0;       // the latest member's finish (merged pairs serve in start order)
    int src = 0;
    int dst = 0;
    double wire_per_byte = 0;
    double ack_per_byte = 0;  // between nodes: fabric packets per payload byte
    std::array<Load, 8> loads{};
    uint32_t load_count = 0;
    FlowClass() = default;
    // Noexcept, so that classes_ (a vector) moves its classes when it grows (a deque's own move
    // constructor may allocate; running out of memory here ends the run).
    FlowClass(FlowClass&&) noexcept = default;
    FlowClass& operator=(FlowClass&&) = default;
  };
  // A class's resources and loads per byte as the allocation reads them (a copy of its
  // `loads`, by slot, in one cache line): the component search and the freezing read it
  // instead of the class. A load per byte is the class's wire bytes, its acks (or fabric
  // packets) or 1 (PCIe), per route(): `which` says which.
  struct alignas(64) SlotLoads {
    std::array<uint32_t, 8> resource{};
    std::array<double, 2> value{};  // wire_per_byte, ack_per_byte
    std::array<uint8_t, 8> which{};  // 0, 1: value[which]; 2: 1.0
    uint32_t count = 0;
    double per_byte(uint32_t k) const { return which[k] < 2 ? value[which[k]] : 1.0; }
  };
  struct Resource {  // one GPU's links in one direction, all planes together, or a fabric link
    double capacity = 0;  // wire bytes per second
    double load = 0;      // wire bytes per second currently used
    double bytes = 0;     // wire bytes carried up to since_ps (then `load` per second)
    int64_t since_ps = 0;
    int64_t busy_ps = 0;  // time with load > 0
    int64_t busy_since = -1;
  };
  // An entry of the completion heap: a class's next completion time when it was pushed;
  // superseded entries (the class's due_key moved on) are skipped when they surface.
  struct Due {
    int64_t at_ps;
    uint64_t key;
    uint32_t slot;
  };
  // The class's weight in the max-min allocation: one per message, or one per merged class.
  double class_weight(const FlowClass& c) const {
    return cfg_.flow_merge_pairs ? 1.0 : static_cast<double>(c.members.size());
  }
  size_t egress(int gpu) const { return static_cast<size_t>(gpu) * 2; }
  size_t ingress(int gpu) const { return static_cast<size_t>(gpu) * 2 + 1; }
  uint32_t class_for(int src, int dst, double wire_per_byte, double ack_per_byte);  // its slot
  uint32_t class_of(int src, int dst, uint64_t bytes, uint32_t messages);
  void start(uint32_t slot, uint64_t bytes, Time tail, Callback on_complete, uint32_t batch);
  void send_batched(Packet&& packet, uint32_t limit);
  void deliver_released(Packet&& p);
  void deliver_batch(uint32_t id);
  void route(FlowClass& c) const;
  // From the payload's departure to the last packet's arrival; with no payload, a header-only
  // packet's whole trip.
  Time tail(int src, int dst, uint64_t bytes) const;
  void trace_busy(size_t resource, int64_t since, int64_t now);
  void fabric_stats(nlohmann::json& links, nlohmann::json& out) const;
  static double bytes_at(const Resource& r, int64_t now) {
    return r.bytes + r.load * (static_cast<double>(now - r.since_ps) / 1e12);
  }
  std::vector<uint32_t>& pair_classes(int src, int dst) { return classes_by_pair_(src, dst); }
  bool crosses_fabric(int src, int dst) const { return fabric_ && !fabric_->same_node(src, dst); }
  double served_at(const FlowClass& c, int64_t now) const {
    return c.served_base + c.rate * (static_cast<double>(now - c.since_ps) / 1e12);
  }
  void set_due(uint32_t slot, int64_t now);  // recomputes the class's due time and pushes it
  void complete_due(int64_t now, std::vector<uint32_t>& drained);
  void drop_class(uint32_t slot);
  void touch(const FlowClass& c);
  void reallocate();
  size_t reallocate_components(int64_t now);
  void reallocate_provisional(int64_t now);
  void shift_load(uint32_t resource, double delta, int64_t now);
  void collect_component(uint32_t seed);
  void order_component();
  void prepare_component();
  void prepare_provisional();
  void fill_component(int64_t now);
  void reset_rates();
  void fill_rounds(bool provisional);
  void start_rounds();
  size_t bottleneck_position(double& step);
  void freeze(uint32_t slot, double level, size_t& left);
  void apply_rates(int64_t now);
  void account_busy(int64_t now);
  void schedule_next();
  void on_event(uint64_t generation);
  void settle();  // reallocates and schedules the next completion if flows started since
  // Registers the listener for the path's next opening, or calls it at once if it is open.
  void wait_room(int src, int dst, PacketKind kind, RoomListener* listener);

  NetConfig cfg_;
  Simulator& sim_;
  TraceRecorder* trace_;
  struct Scratch {
    std::vector<double> room, weight, rate;  // rate: per class slot
    std::vector<uint32_t> crossing, first, fill, active, full, drained;
    std::vector<OnResource> on;  // the provisional pass's classes per resource
    std::vector<char> frozen, seen_res, seen_cls, in_comp;
    std::vector<uint32_t> comp_cls, comp_res, local, stack, visited_res, visited_cls;
    std::vector<std::pair<uint64_t, uint32_t>> keyed;  // (formed, slot)
    // The filling's resources by position among those still active (compacted as they drop
    // out, in local order): room, weight, unfrozen classes, fullness tolerance, resource;
    // pos maps a resource to its position.
    std::vector<double> a_room, a_weight, a_tol, a_ratio;
    std::vector<uint32_t> a_cross, a_res, pos;
    size_t a_dead = 0;  // active positions whose unfrozen classes have all frozen
  };
  // Slots: a class keeps its slot while it has members; a drained class's slot is reused.
  std::vector<FlowClass> classes_;
  std::vector<SlotLoads> slot_loads_;  // by slot, set when a class forms
  // By slot: the live class's `formed`, kNotFormed for a free slot (the order of formation's
  // entries are checked against it without reading the class).
  static constexpr uint64_t kNotFormed = UINT64_MAX;
  std::vector<uint64_t> slot_formed_;
  bool current(const std::pair<uint64_t, uint32_t>& e) const { return slot_formed_[e.second] == e.first; }
  std::vector<uint32_t> free_;    // slots to reuse
  size_t live_classes_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> order_;  // (formed, slot) in order of formation
  uint64_t next_formed_ = 0;
  // Per resource: the live classes loading it, in order of formation (a class is appended when
  // it forms and erased when it drains), so a sum over the list adds in the allocation's order.
  std::vector<std::vector<OnResource>> res_classes_;
  std::vector<uint32_t> seeds_;  // resources touched since the last allocation of components
  bool dirty_ = false;           // a change since the last allocation (full or provisional)
  // net.flow_realloc_interval: the last full allocation, the classes formed since (formed,
  // slot), the seeds a provisional pass has seen, and whether the next full one is scheduled.
  int64_t last_full_ps_ = -1;
  int64_t full_gap_ps_ = 0;  // the wait after the last full allocation (net.flow_realloc_per_class)
  std::vector<std::pair<uint64_t, uint32_t>> provisional_;
  size_t seeds_seen_ = 0;
  bool full_pending_ = false;
  std::vector<Due> due_;             // a min-heap on at_ps: the next completion of each class
  uint64_t next_due_key_ = 0;
  // Indices into classes_ per (src, dst): a flow start looks among the classes of its
  // own pair (usually one) instead of walking every class (about a thousand with 32 GPUs).
  PerPair<std::vector<uint32_t>> classes_by_pair_;
  static constexpr uint32_t kNoClass = UINT32_MAX;
  PerPair<uint32_t> last_class_;  // per (src, dst): the slot class_for gave last (kNoClass: none)
  Scratch scratch_;
  SendWindows windows_;
  std::vector<Resource> resources_;  // NVLink egress and ingress per GPU, then the fabric's links
  std::unique_ptr<FabricTopology> fabric_;  // null without a scale-out fabric
  uint64_t rdma_payload_bytes_ = 0;
  uint64_t rdma_messages_ = 0;
  uint64_t rdma_packets_ = 0;
  struct Done {  // a flow whose payload has left, in on_event
    uint64_t seq;
    Time tail;
    Callback on_complete;
    bool sent = false;  // the flow's on_sent (runs now, before its completion)
  };
  // stream_sent's hand-over callbacks, by the member's seq (few: one per NCCL connection); a
  // side table, so that a member (thousands per class for hub packets) does not grow.
  std::unordered_map<uint64_t, Callback> sent_;
  void take_sent(uint64_t seq);
  // net.flow_batch_bytes: the messages of each batch in flight (slots reused when delivered).
  struct Batch {
    uint64_t bytes = 0;
    uint8_t kind = Packet::kFlowBatchNone;  // its messages' kind (lines or stores): kinds never mix
    std::vector<Packet> packets;
  };
  Slab<Batch> batches_;
  std::vector<Done> done_scratch_;  // kept between events: no allocation per completion
  uint64_t next_seq_ = 0;
  bool unsettled_ = false;
  uint64_t generation_ = 0;
  EventHandle pending_;
  uint64_t flows_completed_ = 0;
};

}  // namespace moehub
