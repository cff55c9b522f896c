#pragma once
// One GPU's hub toward other nodes under hub.internode.route = nic or rail (docs/hub/scale-out.md
// 15, an extension beyond the paper): lines to a GPU on another node leave as RDMA messages to
// their first hop (the destination itself, or with rail the GPU of its node on this GPU's
// rail), merged per first hop with hub.internode.merge; a relay forwards the lines it receives
// for other GPUs of its node over NVLink. Lines inside the node also pass here (one NVLink
// message each), so every message asks its own path's send window.
//
// An inter-node message's lines are kept in a table the receiving hub reads by the message's
// cookie: in the hardware they travel in its payload with a descriptor each (which the message's
// payload counts); the simulator keeps them aside instead of encoding them in bytes.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "hub/hub_config.h"
#include "hub/hub_packet.h"
#include "net/packet.h"
#include "sim/callback.h"
#include "sim/counters.h"
#include "sim/simulator.h"
#include "sim/slab.h"

namespace moehub {

class Network;

// The header of a message whose lines wait in the shared table (bit 61 with bit 63 clear: no
// store tag, HubTag, has it).
inline constexpr uint64_t kLineMessageHeader = 1ULL << 61;

// The lines one message carries, and the GPU whose SMs stored them (its landed reports name it).
struct LineMessage {
  int src = 0;
  std::vector<HubPacket> lines;
};

// What the internode path of every hub did (results[].hub.internode, only when it is on).
struct InternodeCounters {
  uint64_t messages = 0;          // messages this path put on the network (both legs)
  uint64_t rdma_messages = 0;     // of those, messages that crossed to another node
  uint64_t rdma_lines = 0;        // lines those RDMA messages carried
  uint64_t rdma_bytes = 0;        // their payload, descriptors included
  uint64_t merge_timeouts = 0;    // merged messages that left partly full because of the timer
  uint64_t merge_flushes = 0;     // merged messages that left partly full at a flush
  uint64_t forwarded_lines = 0;   // lines a relay sent on over NVLink
  static const CounterTable<InternodeCounters>& table();
};

class InternodePath final : public RoomListener {
 public:
  // `messages` is shared by every GPU's path (a receiving hub takes its message from it);
  // `client` hears about the messages' acknowledgements.
  InternodePath(Simulator& sim, Network& network, const HubConfig& hub, int gpu, int gpus_per_node,
                Slab<LineMessage>& messages, PacketClient* client);

  // The GPU a line to `dst` is sent to first.
  int first_hop(int dst) const;
  // Offers a line to `dst`; false: refused, the path's window is closed (then wait_room).
  bool try_send(const HubPacket& line, int dst);
  // After a refusal: `ready` runs once when the refused path may take a message again.
  void wait_room(Callback ready);
  // Every partly merged message may leave (a fence or kernel end).
  void flush();
  // At a relay: a line that arrived for GPU `dst` of this node goes on over NVLink.
  void forward(int src, const HubPacket& line, int dst);

  void on_room(int) override;
  const InternodeCounters& counters() const { return n_; }
  // Nothing left: no message open or waiting for its window, no line waiting at the relay.
  bool idle() const {
    return due_.empty() && forwards_.empty() &&
           std::none_of(open_.begin(), open_.end(), [](const Open& o) { return o.open; });
  }
  // The most line bytes this GPU held as a relay, waiting for its NVLink window.
  uint64_t relay_peak_bytes() const { return relay_peak_; }

 private:
  struct Open {  // the merged message being filled toward one first-hop GPU
    bool open = false;
    bool due = false;     // full or timed out, waiting for its path's window
    uint32_t bytes = 0;
    uint64_t generation = 0;  // tells a stale timeout from the current message's
    LineMessage message;
  };
  struct Forward {
    int src;
    int dst;
    HubPacket line;
  };

  bool crosses(int dst) const { return dst / per_node_ != gpu_ / per_node_; }
  void send(int hop, LineMessage&& message, uint32_t bytes);
  bool merge_into(const HubPacket& line, int hop);
  // Sends hop's open message if its window allows; false leaves it due.
  bool close(int hop);
  void timeout(int hop, uint64_t generation);
  void pump_forwards();
  void wake();

  Simulator& sim_;
  Network& net_;
  InternodeConfig cfg_;
  Frequency clock_;
  uint32_t line_bytes_;
  int gpu_;
  int per_node_;
  Slab<LineMessage>& messages_;
  PacketClient* client_;
  std::vector<Open> open_;         // per first-hop GPU
  std::vector<int> due_;           // first hops whose message waits for its window
  std::deque<Forward> forwards_;   // relay: lines waiting for the NVLink window
  uint64_t forward_bytes_ = 0;
  uint64_t relay_peak_ = 0;
  bool forwards_waiting_ = false;
  int refused_hop_ = -1;           // the path the last refusal was on
  std::vector<Callback> waiters_;
  std::vector<Callback> scratch_;
  bool room_asked_ = false;
  InternodeCounters n_;
};

}  // namespace moehub
