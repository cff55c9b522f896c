#include "systems/moehub/internode_path.h"

#include <algorithm>
#include <utility>

#include "hub/hub_clock.h"
#include "net/network.h"

namespace moehub {

namespace {
PacketKind kind_of(const HubPacket& line) { return line.rowsp ? PacketKind::RowSparseWrite : PacketKind::Write; }
}  // namespace

const CounterTable<InternodeCounters>& InternodeCounters::table() {
  using S = InternodeCounters;
  static const CounterTable<S> t{
      {"messages", "messages", "messages the hubs' internode paths put on the network (RDMA and NVLink legs)", &S::messages},
      {"rdma_messages", "messages", "of those, messages that crossed to another node", &S::rdma_messages},
      {"rdma_lines", "lines", "lines those RDMA messages carried", &S::rdma_lines},
      {"rdma_bytes", "B", "payload of those RDMA messages, line descriptors included", &S::rdma_bytes},
      {"merge_timeouts", "messages", "merged messages that left partly full when their first line timed out", &S::merge_timeouts},
      {"merge_flushes", "messages", "merged messages that left partly full at a flush", &S::merge_flushes},
      {"forwarded_lines", "lines", "lines a relay sent on over NVLink to their GPU", &S::forwarded_lines}};
  return t;
}

InternodePath::InternodePath(Simulator& sim, Network& network, const HubConfig& hub, int gpu, int gpus_per_node,
                             Slab<LineMessage>& messages, PacketClient* client)
    : sim_(sim),
      net_(network),
      cfg_(hub.internode),
      clock_(hub.clock),
      line_bytes_(hub.rpm.entry_bytes),
      gpu_(gpu),
      per_node_(gpus_per_node),
      messages_(messages),
      client_(client),
      open_(static_cast<size_t>(network.config().gpus)) {}

int InternodePath::first_hop(int dst) const {
  if (cfg_.route != InternodeRoute::Rail || !crosses(dst)) return dst;
  const int relay = dst / per_node_ * per_node_ + gpu_ % per_node_;  // dst's node, this GPU's rail
  return relay < static_cast<int>(open_.size()) ? relay : dst;
}

bool InternodePath::try_send(const HubPacket& line, int dst) {
  const int hop = first_hop(dst);
  refused_hop_ = hop;
  if (cfg_.merge && crosses(hop)) return merge_into(line, hop);
  if (!net_.can_send_to(gpu_, hop, line.payload_bytes, kind_of(line))) return false;
  send(hop, LineMessage{gpu_, {line}}, line.payload_bytes);
  return true;
}

bool InternodePath::merge_into(const HubPacket& line, int hop) {
  const uint32_t add = line.payload_bytes + cfg_.descriptor_bytes;
  Open& o = open_[static_cast<size_t>(hop)];
  if (o.due) return false;  // the full message ahead waits for its window; lines keep their order
  if (o.open && o.bytes + add > cfg_.message_bytes && !close(hop)) return false;
  if (!o.open) {
    o.open = true;
    o.message.src = gpu_;
    sim_.schedule_in(cfg_.merge_timeout, [this, hop, gen = o.generation] { timeout(hop, gen); });
  }
  o.message.lines.push_back(line);
  o.bytes += add;
  // No whole line fits any more: the message leaves now (or when its window opens).
  if (o.bytes + line_bytes_ + cfg_.descriptor_bytes > cfg_.message_bytes) close(hop);
  return true;
}

bool InternodePath::close(int hop) {
  Open& o = open_[static_cast<size_t>(hop)];
  if (!net_.can_send_to(gpu_, hop, o.bytes, kind_of(o.message.lines.front()))) {
    if (!o.due) {
      o.due = true;
      due_.push_back(hop);
    }
    net_.request_room_to(gpu_, hop, this);
    return false;
  }
  o.due = false;
  o.open = false;
  ++o.generation;
  const uint32_t bytes = o.bytes;
  o.bytes = 0;
  send(hop, std::exchange(o.message, LineMessage{}), bytes);
  return true;
}

void InternodePath::timeout(int hop, uint64_t generation) {
  Open& o = open_[static_cast<size_t>(hop)];
  if (!o.open || o.generation != generation || o.due) return;
  ++n_.merge_timeouts;
  close(hop);
}

void InternodePath::flush() {
  for (size_t hop = 0; hop < open_.size(); ++hop) {
    if (!open_[hop].open || open_[hop].due) continue;
    ++n_.merge_flushes;
    close(static_cast<int>(hop));
  }
}

void InternodePath::send(int hop, LineMessage&& message, uint32_t bytes) {
  Packet p;
  p.src = gpu_;
  p.dst = hop;
  p.payload_bytes = bytes;
  p.kind = kind_of(message.lines.front());
  p.header = kLineMessageHeader;
  ++n_.messages;
  if (crosses(hop)) {
    ++n_.rdma_messages;
    n_.rdma_lines += message.lines.size();
    n_.rdma_bytes += bytes;
  }
  p.cookie = messages_.put(std::move(message));
  p.client = client_;
  p.ack_awaited = false;
  p.flow_batch = true;  // independent lines: a flow batch may carry them (net.flow_batch_bytes)
  net_.send(std::move(p));
}

void InternodePath::forward(int src, const HubPacket& line, int dst) {
  const HubClock clock(clock_);
  const Time at = clock.time_of(clock.cycle_at_or_after(sim_.now()) + cfg_.relay_cycles);
  sim_.schedule_at(at, [this, src, line, dst] {
    forwards_.push_back(Forward{src, dst, line});
    forward_bytes_ += line.payload_bytes;
    relay_peak_ = std::max(relay_peak_, forward_bytes_);
    if (!forwards_waiting_) pump_forwards();
  });
}

void InternodePath::pump_forwards() {
  while (!forwards_.empty()) {
    const Forward& f = forwards_.front();
    if (!net_.can_send_to(gpu_, f.dst, f.line.payload_bytes, kind_of(f.line))) {
      forwards_waiting_ = true;
      net_.request_room_to(gpu_, f.dst, this);
      return;
    }
    forward_bytes_ -= f.line.payload_bytes;
    ++n_.forwarded_lines;
    send(f.dst, LineMessage{f.src, {f.line}}, f.line.payload_bytes);
    forwards_.pop_front();
  }
  forwards_waiting_ = false;
}

void InternodePath::wait_room(Callback ready) {
  waiters_.push_back(std::move(ready));
  if (refused_hop_ >= 0) net_.request_room_to(gpu_, refused_hop_, this);
  else net_.request_room(gpu_, this);
}

void InternodePath::on_room(int) {
  std::vector<int> due;
  due.swap(due_);
  for (const int hop : due) {
    open_[static_cast<size_t>(hop)].due = false;
    close(hop);
  }
  if (forwards_waiting_) pump_forwards();
  run_waiters(waiters_, scratch_);
}

}  // namespace moehub
