#pragma once
// Back-pressure at flow fidelity: a sender may hand the flow network a message only while its
// outstanding (accepted, not yet delivered) traffic on that path stays within the window the
// real hardware has. The windows reuse the packet model's limits for the same link:
//  - NVLink, per source GPU and traffic class: the egress FIFO plus one switch input buffer
//    per plane (what the packet model lets a GPU hold between acceptance and the switch:
//    net.egress_buffer + planes x net.switch_buffer for requests, (1 + planes) x
//    net.response_buffer for responses), counted in wire bytes;
//  - the NIC, per source and destination GPU (one RC queue pair per pair): net.nic_send_queue_depth
//    messages (work requests) outstanding.
// A message larger than an empty window is still accepted (else it could never be sent).
// Listeners are woken when their path's window opens, not polled.

#include <cstdint>
#include <vector>

#include "net/net_config.h"
#include "net/packet.h"

namespace moehub {

class SendWindows {
 public:
  explicit SendWindows(const NetConfig& config);

  bool can_send(int src, int dst, uint32_t payload_bytes, PacketKind kind) const;
  // True if some destination of `src` would take a message of that payload now.
  bool can_send_any(int src, uint32_t payload_bytes, PacketKind kind) const;
  // True if some queue pair of `src` to another node has room (the packet fidelity's NIC).
  bool nic_any_open(int src) const { return nic_closed_[static_cast<size_t>(src)] < remote_[static_cast<size_t>(src)]; }
  // `count` equal messages of `payload_bytes` each (a hub's run of lines: accepted when its first
  // would be, so a run may overfill the window by up to count - 1 messages).
  void accept(int src, int dst, uint32_t payload_bytes, PacketKind kind, uint32_t count = 1);
  // Messages were delivered: their room returns, and the path's listeners are called once.
  void release(int src, int dst, uint32_t payload_bytes, PacketKind kind, uint32_t count = 1);
  // Calls listener->on_room(src) once, when the path src -> dst of that class next opens.
  // Returns false if it is open now (nothing registered).
  bool wait(int src, int dst, PacketKind kind, RoomListener* listener);
  // After a run: outstanding traffic left anywhere (a conservation check).
  bool idle() const;
  // The most messages the windows of all GPUs let be outstanding at once, for senders that ask
  // each message's own path first (run.memory_budget's estimate): per source, remote
  // destinations x net.nic_send_queue_depth, and per NVLink class window / smallest message
  // (header only) + 1 (a message larger than an empty window is still taken).
  static uint64_t most_outstanding(const NetConfig& config);

 private:
  static constexpr int kClasses = 2;
  // The NIC path: src and dst on different nodes.
  bool crosses(int src, int dst) const { return cfg_.scale_out() && src / cfg_.gpus_per_node != dst / cfg_.gpus_per_node; }
  size_t pair(int src, int dst) const { return static_cast<size_t>(src) * gpus_ + static_cast<size_t>(dst); }
  size_t nvlink(int src, PacketKind kind) const {
    return static_cast<size_t>(src) * kClasses + static_cast<size_t>(traffic_class(kind));
  }
  bool nvlink_open(int src, uint32_t wire, PacketKind kind) const {
    const uint64_t out = nvlink_out_[nvlink(src, kind)];
    return out == 0 || out + wire <= nvlink_window_[static_cast<size_t>(traffic_class(kind))];
  }
  bool nic_open(int src, int dst) const { return nic_out_[pair(src, dst)] < nic_depth_; }
  static void add(std::vector<RoomListener*>& list, RoomListener* l);
  static void notify(std::vector<RoomListener*>& list, int src);

  NetConfig cfg_;
  size_t gpus_;
  uint64_t nvlink_window_[kClasses] = {0, 0};
  uint32_t nic_depth_ = 0;
  std::vector<uint64_t> nvlink_out_;  // wire bytes, per (src, class)
  std::vector<uint32_t> nic_out_;     // messages, per (src, dst) across nodes
  std::vector<uint32_t> nic_closed_;  // per src: remote destinations whose window is full
  std::vector<uint32_t> remote_;      // per src: destinations on other nodes
  std::vector<std::vector<RoomListener*>> nvlink_waiting_;  // per (src, class)
  std::vector<std::vector<RoomListener*>> nic_waiting_;     // per src: any of its NIC pairs
};

}  // namespace moehub
