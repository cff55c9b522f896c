#include "net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

namespace moehub {

FlowNetwork::FlowNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace)
    : TransferNetwork(sim, std::max(config.gpus, 0)), cfg_(config), sim_(sim), trace_(trace), windows_(config) {
  cfg_.validate();
  resources_.resize(static_cast<size_t>(cfg_.gpus) * 2);
  classes_by_pair_ = PerPair<std::vector<uint32_t>>(cfg_.gpus);
  last_class_ = PerPair<uint32_t>(cfg_.gpus, kNoClass);
  for (auto& r : resources_) r.capacity = static_cast<double>(cfg_.gpu_bandwidth.bytes_per_second());
  if (cfg_.scale_out()) {
    fabric_ = std::make_unique<FabricTopology>(cfg_);
    const size_t links = fabric_->links().size();
    for (uint32_t l = 0; l < links; ++l) resources_.push_back(Resource{.capacity = fabric_->capacity(l)});
    if (trace_) {
      for (int l = 0; l < fabric_->leaves(); ++l) trace_->name_process(cfg_.gpus + l, fmt::format("leaf {}", l));
    }
  }
  res_classes_.resize(resources_.size());
}

namespace {
// Heap order of a class's members: earliest finish first, then start order.
constexpr auto later = [](const auto& a, const auto& b) {
  return a.finish != b.finish ? a.finish > b.finish : a.seq > b.seq;
};
// Heap order of the classes' due times: earliest first.
constexpr auto due_later = [](const auto& a, const auto& b) { return a.at_ps > b.at_ps; };
}  // namespace

void FlowNetwork::transfer(int src, int dst, uint64_t bytes, int /*priority*/, Callback on_complete) {
  if (src < 0 || dst < 0 || src >= cfg_.gpus || dst >= cfg_.gpus) throw std::logic_error("transfer: GPU index out of range");
  if (bytes == 0 || src == dst) {
    sim_.schedule_in(Time::zero(), std::move(on_complete));
    return;
  }
  const uint32_t slot = class_of(src, dst, bytes, 1);
  start(slot, bytes, tail(src, dst, bytes), std::move(on_complete), kNoBatch);
}

// The class of `messages` messages of `bytes` each from src to dst (formed if new); counts their
// RDMA packets. Equal messages load the links per byte as one does, so the class is one's.
uint32_t FlowNetwork::class_of(int src, int dst, uint64_t bytes, uint32_t messages) {
  double wire_per_byte = 0;
  double ack_per_byte = 0;
  if (crosses_fabric(src, dst)) {
    wire_per_byte = static_cast<double>(cfg_.rdma_wire_bytes(bytes)) / static_cast<double>(bytes);
    ack_per_byte = static_cast<double>(cfg_.rdma_packets(bytes)) / static_cast<double>(bytes);
    rdma_payload_bytes_ += bytes * messages;
    rdma_messages_ += messages;
    rdma_packets_ += cfg_.rdma_packets(bytes) * messages;
  } else {
    wire_per_byte = static_cast<double>(cfg_.wire_bytes(bytes)) / static_cast<double>(bytes);
    ack_per_byte =
        cfg_.write_ack
            ? static_cast<double>(cfg_.packets_for(bytes) * cfg_.wire_flits(0) * cfg_.flit_bytes) / static_cast<double>(bytes)
            : 0.0;
  }
  return class_for(src, dst, wire_per_byte, ack_per_byte);
}

// A new member of class `slot`: a message (or the first of a batch) whose payload follows the
// class's latest member when merged.
void FlowNetwork::start(uint32_t slot, uint64_t bytes, Time tail, Callback on_complete, uint32_t batch) {
  FlowClass& c = classes_[slot];
  // A merged class serves its messages one after another: this one's payload follows the
  // latest member's, and the class's rate does not change while it has members.
  const bool merged = cfg_.flow_merge_pairs && !c.members.empty();
  const int64_t now = sim_.now().ps();
  const double begin = merged ? c.last_finish : served_at(c, now);
  c.last_finish = begin + static_cast<double>(bytes);
  c.members.push_back(Member{c.last_finish, next_seq_++, tail, batch, std::move(on_complete)});
  // Merged, members finish in start order: the queue is already a heap.
  if (!cfg_.flow_merge_pairs) std::push_heap(c.members.begin(), c.members.end(), later);
  if (c.members.front().finish != c.next_finish || c.members.size() == 1) {
    c.next_finish = c.members.front().finish;
    if (c.rate > 0) set_due(slot, now);
  }
  if (merged) return;
  if (!cfg_.flow_merge_pairs) touch(c);  // one more member: the class weighs more
  // Rates matter only once time moves: flows that start at the same instant (every hub
  // issuing on the same clock edge) share one reallocation, at the end of that instant.
  if (!unsettled_) {
    unsettled_ = true;
    sim_.schedule_in(Time::zero(), [this] { settle(); });
  }
}

void FlowNetwork::stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions&, Callback on_sent,
                              Callback on_complete) {
  if (bytes == 0 || src == dst) {
    sim_.schedule_in(Time::zero(), std::move(on_sent));
  } else {
    sent_.emplace(next_seq_, std::move(on_sent));  // the seq transfer() gives the member
  }
  transfer(src, dst, bytes, priority, std::move(on_complete));
}

void FlowNetwork::take_sent(uint64_t seq) {
  if (sent_.empty()) return;
  const auto it = sent_.find(seq);
  if (it == sent_.end()) return;
  done_scratch_.push_back(Done{seq, Time::zero(), std::move(it->second), true});
  sent_.erase(it);
}

// The message takes room in its path's window until it is delivered; then its sender may be
// waiting for that room.
void FlowNetwork::send(Packet&& packet) {
  const int src = packet.src;
  const int dst = packet.dst;
  const uint32_t bytes = packet.payload_bytes;
  const PacketKind kind = packet.kind;
  const int priority = packet.priority;
  if (packet.messages != 1) {
    if (packet.flow_batch != Packet::kFlowBatchLine || cfg_.flow_batch_bytes == 0 || packet.messages == 0 ||
        bytes % packet.messages != 0) {
      throw std::logic_error("FlowNetwork: a run of messages outside flow batches");
    }
    windows_.accept(src, dst, bytes / packet.messages, kind, packet.messages);
  } else {
    windows_.accept(src, dst, bytes, kind);
  }
  // Stores batch only between nodes: inside a node the NVLink window (bytes, about the path's
  // bandwidth-delay product) would hold a batch's room until its last store arrives and slow the
  // pair (Comet on 16 GPUs: +3.4 % at 16 KiB with NVLink stores batched too).
  const uint32_t batch_limit = packet.flow_batch == Packet::kFlowBatchLine ? cfg_.flow_batch_bytes
                               : packet.flow_batch == Packet::kFlowBatchStore && crosses_fabric(src, dst)
                                   ? cfg_.flow_store_batch_bytes
                                   : 0;
  if (batch_limit > 0 && bytes > 0 && src != dst) return send_batched(std::move(packet), batch_limit);
  Callback delivered = [this, p = std::move(packet)]() mutable { deliver_released(std::move(p)); };
  // A header-only message (a read request) has no payload to share the links' rates, but its
  // header still crosses the path: it arrives after that header's unloaded trip (its bytes are
  // not charged to the links' loads).
  if (bytes == 0 && src != dst) {
    sim_.schedule_in(tail(src, dst, 0), std::move(delivered));
    return;
  }
  transfer(src, dst, bytes, priority, std::move(delivered));
}

// net.flow_batch_bytes (a stated reduction): a batchable message joins its class's latest
// member if that member is a batch still queued behind the one being served (joining it moves
// no due time) with room left and the same tail (the same last-packet size); else it starts a
// batch of its own. A batch's messages are delivered together, in order, when its last byte
// and tail have arrived: each counts in its window and the RDMA counters as if sent alone. Lines
// and stores batch under their own limits and never join each other's batches. A run
// (Packet::messages > 1, hub.flow_line_runs) is its messages back to back: their class, their
// RDMA counts, the last one's tail.
void FlowNetwork::send_batched(Packet&& packet, uint32_t limit) {
  const uint64_t bytes = packet.payload_bytes;
  const uint64_t each = bytes / packet.messages;
  const uint32_t slot = class_of(packet.src, packet.dst, each, packet.messages);
  const Time tail = this->tail(packet.src, packet.dst, each);
  FlowClass& c = classes_[slot];
  if (c.members.size() >= 2) {
    Member& last = c.members.back();
    if (last.batch != kNoBatch && last.tail == tail) {
      Batch& b = batches_.at(last.batch);
      if (b.kind == packet.flow_batch && b.bytes + bytes <= limit) {
        b.bytes += bytes;
        b.packets.push_back(std::move(packet));
        c.last_finish += static_cast<double>(bytes);
        last.finish = c.last_finish;
        return;
      }
    }
  }
  const uint32_t id = batches_.acquire();
  Batch& b = batches_.at(id);
  b.bytes = bytes;
  b.kind = packet.flow_batch;
  b.packets.push_back(std::move(packet));
  start(slot, bytes, tail, [this, id] { deliver_batch(id); }, id);
}

// The receiver gets the message first, then its path's window frees its room (a sender waiting
// for that room may send again).
void FlowNetwork::deliver_released(Packet&& p) {
  const int s = p.src;
  const int d = p.dst;
  const uint32_t b = p.payload_bytes;
  const PacketKind k = p.kind;
  const uint32_t n = p.messages;
  deliver(std::move(p));
  windows_.release(s, d, b / n, k, n);
}

void FlowNetwork::deliver_batch(uint32_t id) {
  // Moved out first: a receiver may send, and a new batch may take this slot's storage.
  std::vector<Packet> packets = std::move(batches_.at(id).packets);
  batches_.at(id).packets.clear();
  batches_.release(id);
  if (deliver_together(packets)) {
    for (const Packet& p : packets) windows_.release(p.src, p.dst, p.payload_bytes / p.messages, p.kind, p.messages);
  } else {
    for (Packet& p : packets) deliver_released(std::move(p));
  }
  packets.clear();
  if (batches_.at(id).packets.capacity() == 0) batches_.at(id).packets = std::move(packets);  // keeps the storage
}

void FlowNetwork::wait_room(int src, int dst, PacketKind kind, RoomListener* listener) {
  if (windows_.wait(src, dst, kind, listener)) return;
  sim_.schedule_in(Time::zero(), [src, listener] { listener->on_room(src); });
}

void FlowNetwork::settle() {
  if (!unsettled_) return;
  unsettled_ = false;
  reallocate();
  schedule_next();
}

uint32_t FlowNetwork::class_for(int src, int dst, double wire_per_byte, double ack_per_byte) {
  // A pair has at most one live class per (wire, ack): the one found last is checked first,
  // without the miss on the pair's list (exact: a match is the one the list would give).
  uint32_t& hint = last_class_(src, dst);
  if (hint != kNoClass) {
    const FlowClass& h = classes_[hint];
    if (h.live && h.src == src && h.dst == dst && h.wire_per_byte == wire_per_byte && h.ack_per_byte == ack_per_byte) {
      return hint;
    }
  }
  std::vector<uint32_t>& same_pair = pair_classes(src, dst);
  for (const uint32_t i : same_pair) {
    const FlowClass& c = classes_[i];
    if (c.wire_per_byte == wire_per_byte && c.ack_per_byte == ack_per_byte) return hint = i;
  }
  uint32_t slot = 0;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(classes_.size());
    classes_.emplace_back();
    slot_loads_.emplace_back();
    slot_formed_.push_back(kNotFormed);
  } else {
    slot = free_.back();
    free_.pop_back();
    classes_[slot] = FlowClass{};
  }
  same_pair.push_back(slot);
  hint = slot;
  FlowClass& c = classes_[slot];
  c.live = true;
  ++live_classes_;
  c.formed = next_formed_++;
  slot_formed_[slot] = c.formed;
  order_.emplace_back(c.formed, slot);
  if (cfg_.flow_realloc_interval.ps() > 0) provisional_.emplace_back(c.formed, slot);
  c.since_ps = sim_.now().ps();
  c.src = src;
  c.dst = dst;
  c.wire_per_byte = wire_per_byte;
  c.ack_per_byte = ack_per_byte;
  route(c);
  SlotLoads& sl = slot_loads_[slot];
  sl.count = c.load_count;
  sl.value = {wire_per_byte, ack_per_byte};
  for (uint32_t k = 0; k < c.load_count; ++k) {
    const double per_byte = c.loads[k].per_byte;
    res_classes_[c.loads[k].resource].push_back({slot, per_byte});
    sl.resource[k] = c.loads[k].resource;
    sl.which[k] = per_byte == wire_per_byte ? 0 : per_byte == ack_per_byte ? 1 : 2;
    if (sl.per_byte(k) != per_byte) throw std::logic_error("FlowNetwork: a load per byte outside the slot's copy");
  }
  touch(c);
  return slot;
}

// The resources a class loads. Inside a node (or without a fabric): its source's egress and
// its destination's ingress by wire bytes, the reverse by acks.
void FlowNetwork::route(FlowClass& c) const {
  const auto add = [&](size_t r, double per_byte) {
    if (per_byte > 0) c.loads[c.load_count++] = Load{static_cast<uint32_t>(r), per_byte};
  };
  if (!crosses_fabric(c.src, c.dst)) {
    add(egress(c.src), c.wire_per_byte);
    add(ingress(c.dst), c.wire_per_byte);
    add(egress(c.dst), c.ack_per_byte);
    add(ingress(c.src), c.ack_per_byte);
    return;
  }
  // Message engine by packets, PCIe by payload (GPUDirect reads and writes GPU memory), the
  // NIC ports and the fat tree by wire bytes.
  const size_t base = static_cast<size_t>(cfg_.gpus) * 2;
  const FabricTopology::Route r = fabric_->route(c.src, c.dst);
  for (size_t i = 0; i < r.links.size(); ++i) {
    using K = FabricTopology::Kind;
    const K kind = fabric_->links()[r.links[i]].kind;
    const double per_byte = kind == K::NicMessages ? c.ack_per_byte
                            : (kind == K::PcieUp || kind == K::PcieDown) ? 1.0
                                                                          : c.wire_per_byte;
    add(base + r.links[i], per_byte);
  }
}

Time FlowNetwork::tail(int src, int dst, uint64_t bytes) const {
  if (!crosses_fabric(src, dst)) {
    const uint64_t rest = bytes % cfg_.max_payload_bytes;
    const uint32_t last_payload = bytes == 0 ? 0 : static_cast<uint32_t>(rest ? rest : cfg_.max_payload_bytes);
    return cfg_.plane_bandwidth().transfer_time(static_cast<uint64_t>(cfg_.wire_flits(last_payload)) * cfg_.flit_bytes) +
           cfg_.gpu_switch_latency * 2 + cfg_.switch_latency;
  }
  // The last fabric packet: serialised at the NIC, then PCIe, NIC, cables and switches on the
  // way, the destination NIC and its PCIe.
  const uint64_t rest = bytes % cfg_.rdma_mtu_bytes;
  const uint64_t last = (bytes == 0 ? 0 : rest ? rest : cfg_.rdma_mtu_bytes) + cfg_.rdma_header_bytes;
  const bool one_leaf = fabric_->leaf_of(src) == fabric_->leaf_of(dst);
  return cfg_.nic_bandwidth.transfer_time(last) + cfg_.pcie_latency * 2 + cfg_.nic_latency * 2 +
         cfg_.fabric_cable_latency * (one_leaf ? 2 : 4) + cfg_.fabric_switch_latency * (one_leaf ? 1 : 3);
}


void FlowNetwork::set_due(uint32_t slot, int64_t now) {
  FlowClass& c = classes_[slot];
  c.due_ps = kNever;
  c.due_key = ++next_due_key_;  // the class's earlier entries are superseded
  if (c.members.empty() || c.rate <= 0) return;
  const double left_s = std::max(0.0, c.next_finish - served_at(c, now)) / c.rate;
  c.due_ps = now + static_cast<int64_t>(std::min(std::ceil(left_s * 1e12), 4e18));
  due_.push_back(Due{c.due_ps, c.due_key, slot});
  std::push_heap(due_.begin(), due_.end(), due_later);
}


void FlowNetwork::trace_busy(size_t resource, int64_t since, int64_t now) {
  const size_t nvlink = static_cast<size_t>(cfg_.gpus) * 2;
  if (resource < nvlink) {
    const int gpu = static_cast<int>(resource / 2);
    trace_->span(gpu, trace_->track(gpu, resource % 2 ? "ingress" : "egress"), "busy", "net", Time::from_ps(since),
                 Time::from_ps(now));
    return;
  }
  // A GPU's PCIe and NIC links on its own process, a leaf's spine links on the leaf's.
  const auto link = static_cast<uint32_t>(resource - nvlink);
  const FabricTopology::Link& l = fabric_->links()[link];
  const bool spine = l.kind == FabricTopology::Kind::LeafToSpine || l.kind == FabricTopology::Kind::SpineToLeaf;
  const int pid = spine ? cfg_.gpus + l.a : l.a;
  const std::string name = fabric_->name_from(link) + "->" + fabric_->name_to(link);
  trace_->span(pid, trace_->track(pid, name), "busy", "net", Time::from_ps(since), Time::from_ps(now));
}

void FlowNetwork::schedule_next() {
  if (pending_.valid()) sim_.cancel(pending_);
  pending_ = EventHandle{};
  // Superseded entries surface and go; the top is then some class's current due time.
  while (!due_.empty()) {
    const Due& top = due_.front();
    const FlowClass& c = classes_[top.slot];
    if (c.live && c.due_key == top.key) break;
    std::pop_heap(due_.begin(), due_.end(), due_later);
    due_.pop_back();
  }
  if (due_.empty()) return;
  // A reallocation supersedes the entries of every class whose rate it changed: rebuild the
  // heap from the current ones before the superseded ones outnumber them.
  if (due_.size() > 2 * live_classes_ + 1024) {
    due_.clear();
    for (uint32_t slot = 0; slot < classes_.size(); ++slot) {
      const FlowClass& c = classes_[slot];
      if (c.live && c.due_ps != kNever) due_.push_back(Due{c.due_ps, c.due_key, slot});
    }
    std::make_heap(due_.begin(), due_.end(), due_later);
  }
  const uint64_t gen = ++generation_;
  const Time at = Time::from_ps(due_.front().at_ps) - sim_.now();
  pending_ = sim_.schedule_in(at, [this, gen] { on_event(gen); });
}

// Completes every member whose payload has left by now, class by class in due order.
void FlowNetwork::complete_due(int64_t now, std::vector<uint32_t>& drained) {
  while (!due_.empty() && due_.front().at_ps <= now) {
    const Due top = due_.front();
    std::pop_heap(due_.begin(), due_.end(), due_later);
    due_.pop_back();
    FlowClass& c = classes_[top.slot];
    if (!c.live || c.due_key != top.key) continue;
    while (!c.members.empty() && c.due_ps <= now) {
      if (cfg_.flow_merge_pairs) {
        Member& m = c.members.front();
        take_sent(m.seq);
        done_scratch_.push_back(Done{m.seq, m.tail, std::move(m.on_complete)});
        c.members.pop_front();
      } else {
        std::pop_heap(c.members.begin(), c.members.end(), later);
        Member& m = c.members.back();
        take_sent(m.seq);
        done_scratch_.push_back(Done{m.seq, m.tail, std::move(m.on_complete)});
        c.members.pop_back();
      }
      ++flows_completed_;
      if (c.members.empty()) {
        c.due_key = ++next_due_key_;  // no entry of a drained class is current
        drained.push_back(top.slot);
        break;
      }
      c.next_finish = c.members.front().finish;
      set_due(top.slot, now);
      if (!cfg_.flow_merge_pairs) touch(c);  // one member fewer: the class weighs less
    }
  }
}

void FlowNetwork::drop_class(uint32_t slot) {
  FlowClass& c = classes_[slot];
  std::erase(pair_classes(c.src, c.dst), slot);
  for (uint32_t k = 0; k < c.load_count; ++k) {
    std::erase_if(res_classes_[c.loads[k].resource], [slot](const OnResource& e) { return e.slot == slot; });
  }
  // Between full allocations the others keep their rates: the drained load leaves at once.
  if (cfg_.flow_realloc_interval.ps() > 0) {
    for (uint32_t k = 0; k < c.load_count; ++k) shift_load(c.loads[k].resource, -class_weight(c) * c.rate * c.loads[k].per_byte, sim_.now().ps());
  }
  touch(c);
  c.live = false;
  slot_formed_[slot] = kNotFormed;
  --live_classes_;
  c.due_ps = kNever;
  free_.push_back(slot);
}

void FlowNetwork::on_event(uint64_t generation) {
  if (generation != generation_) return;
  pending_ = EventHandle{};
  const int64_t now = sim_.now().ps();
  std::vector<uint32_t>& drained = scratch_.drained;
  drained.clear();
  complete_due(now, drained);
  for (const uint32_t slot : drained) drop_class(slot);
  std::vector<Done>& done = done_scratch_;
  // A flow's hand-over (sent) comes before its completion.
  std::sort(done.begin(), done.end(),
            [](const Done& a, const Done& b) { return a.seq != b.seq ? a.seq < b.seq : a.sent > b.sent; });
  // Merged classes keep their rates until one drains or a new one forms.
  if (dirty_) reallocate();
  unsettled_ = false;
  schedule_next();
  for (Done& d : done) sim_.schedule_in(d.tail, std::move(d.on_complete));
  done.clear();
}

std::vector<double> FlowNetwork::rates() {
  settle();
  std::vector<std::pair<uint64_t, double>> by_start;
  for (const auto& c : classes_) {
    if (!c.live) continue;
    for (const auto& m : c.members) by_start.emplace_back(m.seq, c.rate);
  }
  std::sort(by_start.begin(), by_start.end());
  std::vector<double> r;
  for (const auto& [seq, rate] : by_start) r.push_back(rate);
  return r;
}

nlohmann::json FlowNetwork::stats() const {
  const Time elapsed = sim_.now();
  nlohmann::json links = nlohmann::json::array();
  const auto link = [&](const Resource& r, const std::string& from, const std::string& to) {
    const double bytes = bytes_at(r, elapsed.ps()) / cfg_.planes;
    const int64_t busy = r.busy_ps + (r.busy_since >= 0 ? elapsed.ps() - r.busy_since : 0);
    const double cap = r.capacity / cfg_.planes;
    const double util = elapsed.ps() > 0 ? bytes / (cap * elapsed.seconds()) : 0.0;
    links.push_back({{"from", from}, {"to", to}, {"bytes", static_cast<uint64_t>(std::llround(bytes))},
                     {"busy_ps", busy}, {"utilisation", util}, {"peak_queue_flits", 0}, {"stall_ps", 0}});
  };
  for (int g = 0; g < cfg_.gpus; ++g) {
    for (int s = 0; s < cfg_.planes; ++s) link(resources_[egress(g)], fmt::format("gpu{}", g), fmt::format("sw{}", s));
  }
  for (int s = 0; s < cfg_.planes; ++s) {
    for (int d = 0; d < cfg_.gpus; ++d) link(resources_[ingress(d)], fmt::format("sw{}", s), fmt::format("gpu{}", d));
  }
  nlohmann::json out = {{"fidelity", "flow"}, {"elapsed_ps", elapsed.ps()}, {"flows_completed", flows_completed_}};
  if (fabric_) fabric_stats(links, out);
  out["links"] = std::move(links);
  return out;
}

// The fabric's links after the NVLink ones (each direction of each link; the message engine
// in packets), and the RDMA totals.
void FlowNetwork::fabric_stats(nlohmann::json& links, nlohmann::json& out) const {
  const Time elapsed = sim_.now();
  const size_t base = static_cast<size_t>(cfg_.gpus) * 2;
  for (uint32_t l = 0; l < fabric_->links().size(); ++l) {
    const Resource& r = resources_[base + l];
    const double bytes = bytes_at(r, elapsed.ps());
    const int64_t busy = r.busy_ps + (r.busy_since >= 0 ? elapsed.ps() - r.busy_since : 0);
    const double util = elapsed.ps() > 0 ? bytes / (r.capacity * elapsed.seconds()) : 0.0;
    const bool messages = fabric_->links()[l].kind == FabricTopology::Kind::NicMessages;
    links.push_back({{"from", fabric_->name_from(l)}, {"to", fabric_->name_to(l)},
                     {messages ? "packets" : "bytes", static_cast<uint64_t>(std::llround(bytes))}, {"busy_ps", busy},
                     {"utilisation", util}, {"peak_queue_flits", 0}, {"stall_ps", 0}});
  }
  out["nodes"] = fabric_->nodes();
  out["rdma_payload_bytes"] = rdma_payload_bytes_;
  out["rdma_messages"] = rdma_messages_;
  out["rdma_packets"] = rdma_packets_;
}

void FlowNetwork::flush_trace() {}

}  // namespace moehub
