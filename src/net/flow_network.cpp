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
  double wire_per_byte = 0;
  double ack_per_byte = 0;
  if (crosses_fabric(src, dst)) {
    wire_per_byte = static_cast<double>(cfg_.rdma_wire_bytes(bytes)) / static_cast<double>(bytes);
    ack_per_byte = static_cast<double>(cfg_.rdma_packets(bytes)) / static_cast<double>(bytes);
    rdma_payload_bytes_ += bytes;
    ++rdma_messages_;
    rdma_packets_ += cfg_.rdma_packets(bytes);
  } else {
    wire_per_byte = static_cast<double>(cfg_.wire_bytes(bytes)) / static_cast<double>(bytes);
    ack_per_byte =
        cfg_.write_ack
            ? static_cast<double>(cfg_.packets_for(bytes) * cfg_.wire_flits(0) * cfg_.flit_bytes) / static_cast<double>(bytes)
            : 0.0;
  }
  const uint32_t slot = class_for(src, dst, wire_per_byte, ack_per_byte);
  FlowClass& c = classes_[slot];
  const Time tail = this->tail(src, dst, bytes);
  // A merged class serves its messages one after another: this one's payload follows the
  // latest member's, and the class's rate does not change while it has members.
  const bool merged = cfg_.flow_merge_pairs && !c.members.empty();
  const int64_t now = sim_.now().ps();
  const double start = merged ? c.last_finish : served_at(c, now);
  c.last_finish = start + static_cast<double>(bytes);
  c.members.push_back(Member{c.last_finish, next_seq_++, tail, std::move(on_complete)});
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

// The message takes room in its path's window until it is delivered; then its sender may be
// waiting for that room.
void FlowNetwork::send(Packet&& packet) {
  const int src = packet.src;
  const int dst = packet.dst;
  const uint32_t bytes = packet.payload_bytes;
  const PacketKind kind = packet.kind;
  windows_.accept(src, dst, bytes, kind);
  transfer(src, dst, bytes, packet.priority, [this, p = std::move(packet)]() mutable {
    const int s = p.src;
    const int d = p.dst;
    const uint32_t b = p.payload_bytes;
    const PacketKind k = p.kind;
    deliver(std::move(p));
    windows_.release(s, d, b, k);
  });
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
  std::vector<uint32_t>& same_pair = pair_classes(src, dst);
  for (const uint32_t i : same_pair) {
    const FlowClass& c = classes_[i];
    if (c.wire_per_byte == wire_per_byte && c.ack_per_byte == ack_per_byte) return i;
  }
  uint32_t slot = 0;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(classes_.size());
    classes_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
    classes_[slot] = FlowClass{};
  }
  same_pair.push_back(slot);
  FlowClass& c = classes_[slot];
  c.live = true;
  ++live_classes_;
  c.formed = next_formed_++;
  order_.emplace_back(c.formed, slot);
  c.since_ps = sim_.now().ps();
  c.src = src;
  c.dst = dst;
  c.wire_per_byte = wire_per_byte;
  c.ack_per_byte = ack_per_byte;
  route(c);
  for (uint32_t k = 0; k < c.load_count; ++k) res_classes_[c.loads[k].resource].push_back(slot);
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
    const uint32_t last_payload = static_cast<uint32_t>(rest ? rest : cfg_.max_payload_bytes);
    return cfg_.plane_bandwidth().transfer_time(static_cast<uint64_t>(cfg_.wire_flits(last_payload)) * cfg_.flit_bytes) +
           cfg_.gpu_switch_latency * 2 + cfg_.switch_latency;
  }
  // The last fabric packet: serialised at the NIC, then PCIe, NIC, cables and switches on the
  // way, the destination NIC and its PCIe.
  const uint64_t rest = bytes % cfg_.rdma_mtu_bytes;
  const uint64_t last = (rest ? rest : cfg_.rdma_mtu_bytes) + cfg_.rdma_header_bytes;
  const bool one_leaf = fabric_->leaf_of(src) == fabric_->leaf_of(dst);
  return cfg_.nic_bandwidth.transfer_time(last) + cfg_.pcie_latency * 2 + cfg_.nic_latency * 2 +
         cfg_.fabric_cable_latency * (one_leaf ? 2 : 4) + cfg_.fabric_switch_latency * (one_leaf ? 1 : 3);
}

// A change (a class formed or drained, or a class's weight changed) touches the resources the
// class loads: the next allocation recomputes only their connected components.
void FlowNetwork::touch(const FlowClass& c) {
  for (uint32_t k = 0; k < c.load_count; ++k) seeds_.push_back(c.loads[k].resource);
}

// Max-min rates decompose over connected components (classes joined by the resources they
// share): a component's allocation does not depend on any other. So only the components of the
// touched resources are filled again, each on its own, and each the same way whatever else
// changed: its classes in order of formation, its resources in index order.
void FlowNetwork::reallocate() {
  Scratch& w = scratch_;
  w.seen_res.resize(resources_.size(), 0);
  w.seen_cls.resize(classes_.size(), 0);
  w.visited_res.clear();
  w.visited_cls.clear();
  const int64_t now = sim_.now().ps();
  for (const uint32_t seed : seeds_) {
    if (w.seen_res[seed]) continue;
    collect_component(seed);
    fill_component(now);
  }
  for (const uint32_t r : w.visited_res) w.seen_res[r] = 0;
  for (const uint32_t slot : w.visited_cls) w.seen_cls[slot] = 0;
  seeds_.clear();
  account_busy(now);
}

// Opens a resource's busy period when it gains load and closes it (statistics, timeline) when
// it loses all of it. Only the refilled components' resources can have changed load; they are
// visited in index order, as a walk over every resource would.
void FlowNetwork::account_busy(int64_t now) {
  std::vector<uint32_t>& visited = scratch_.visited_res;
  std::sort(visited.begin(), visited.end());
  for (const uint32_t i : visited) {
    Resource& r = resources_[i];
    if (r.load > 0 && r.busy_since < 0) {
      r.busy_since = now;
    } else if (r.load == 0 && r.busy_since >= 0) {
      r.busy_ps += now - r.busy_since;
      if (trace_) trace_busy(i, r.busy_since, now);
      r.busy_since = -1;
    }
  }
}

// The resources and classes connected to `seed` (depth first), then in allocation order.
void FlowNetwork::collect_component(uint32_t seed) {
  Scratch& w = scratch_;
  w.comp_cls.clear();
  w.comp_res.clear();
  w.stack.assign(1, seed);
  w.seen_res[seed] = 1;
  while (!w.stack.empty()) {
    const uint32_t r = w.stack.back();
    w.stack.pop_back();
    w.comp_res.push_back(r);
    for (const uint32_t slot : res_classes_[r]) {
      if (w.seen_cls[slot]) continue;
      w.seen_cls[slot] = 1;
      w.comp_cls.push_back(slot);
      const FlowClass& c = classes_[slot];
      for (uint32_t k = 0; k < c.load_count; ++k) {
        const uint32_t q = c.loads[k].resource;
        if (w.seen_res[q]) continue;
        w.seen_res[q] = 1;
        w.stack.push_back(q);
      }
    }
  }
  w.visited_res.insert(w.visited_res.end(), w.comp_res.begin(), w.comp_res.end());
  w.visited_cls.insert(w.visited_cls.end(), w.comp_cls.begin(), w.comp_cls.end());
  order_component();
  std::sort(w.comp_res.begin(), w.comp_res.end());
}

// Puts the component's classes in order of formation: a scan of order_ when the component
// holds a large share of the classes (an all-to-all joins them all), else a sort of its own.
void FlowNetwork::order_component() {
  Scratch& w = scratch_;
  if (w.comp_cls.size() * 4 < live_classes_) {
    w.keyed.clear();
    for (const uint32_t slot : w.comp_cls) w.keyed.emplace_back(classes_[slot].formed, slot);
    std::sort(w.keyed.begin(), w.keyed.end());
    for (size_t i = 0; i < w.keyed.size(); ++i) w.comp_cls[i] = w.keyed[i].second;
    return;
  }
  // Entries of drained classes (a slot may hold a later class by now) go when they outnumber
  // the live ones.
  const auto current = [&](const std::pair<uint64_t, uint32_t>& e) {
    const FlowClass& c = classes_[e.second];
    return c.live && c.formed == e.first;
  };
  if (order_.size() > 2 * live_classes_ + 64) std::erase_if(order_, [&](const auto& e) { return !current(e); });
  // seen_cls also marks the classes of components filled earlier in this allocation.
  w.in_comp.resize(classes_.size(), 0);
  for (const uint32_t slot : w.comp_cls) w.in_comp[slot] = 1;
  w.comp_cls.clear();
  for (const auto& e : order_) {
    if (!current(e) || !w.in_comp[e.second]) continue;
    w.in_comp[e.second] = 0;
    w.comp_cls.push_back(e.second);
  }
}

// The component's weights and class lists per resource, before the first round. Resources are
// numbered within the component (j), classes by their place in it (i).
void FlowNetwork::prepare_component() {
  Scratch& w = scratch_;
  const size_t nc = w.comp_cls.size();
  const size_t nr = w.comp_res.size();
  w.local.resize(resources_.size());
  for (size_t j = 0; j < nr; ++j) w.local[w.comp_res[j]] = static_cast<uint32_t>(j);
  w.room.resize(nr);
  w.weight.assign(nr, 0.0);
  w.crossing.assign(nr, 0);  // unfrozen classes that load the resource
  w.first.assign(nr + 1, 0);  // classes on resource j: on[first[j] .. first[j + 1])
  w.rate.assign(nc, 0.0);
  for (size_t j = 0; j < nr; ++j) w.room[j] = resources_[w.comp_res[j]].capacity;
  const auto cls = [&](size_t i) -> const FlowClass& { return classes_[w.comp_cls[i]]; };
  const auto touches = [&](const FlowClass& c, auto&& visit) {
    for (uint32_t k = 0; k < c.load_count; ++k) visit(static_cast<size_t>(w.local[c.loads[k].resource]), c.loads[k].per_byte);
  };
  for (size_t i = 0; i < nc; ++i) {
    const double n = class_weight(cls(i));
    touches(cls(i), [&](size_t j, double per_byte) {
      w.weight[j] += n * per_byte;
      ++w.crossing[j];
    });
  }
  w.active.clear();
  for (size_t j = 0; j < nr; ++j) {
    w.first[j + 1] = w.first[j] + w.crossing[j];
    if (w.crossing[j] > 0) w.active.push_back(static_cast<uint32_t>(j));
  }
  w.on.resize(w.first[nr]);
  w.fill.assign(w.first.begin(), w.first.end() - 1);
  for (size_t i = 0; i < nc; ++i) {
    touches(cls(i), [&](size_t j, double) { w.on[w.fill[j]++] = static_cast<uint32_t>(i); });
  }
}

// Progressive filling over one component: raise every unfrozen class's rate together until
// some resource is full, freeze the classes crossing it, repeat (max-min fairness in payload
// rate). Each resource keeps the weight of the unfrozen classes crossing it, reduced as they
// freeze, so a round costs one pass over the resources rather than over the classes.
void FlowNetwork::fill_component(int64_t now) {
  prepare_component();
  Scratch& w = scratch_;
  const size_t nc = w.comp_cls.size();
  const auto cls = [&](size_t i) -> const FlowClass& { return classes_[w.comp_cls[i]]; };
  const auto touches = [&](const FlowClass& c, auto&& visit) {
    for (uint32_t k = 0; k < c.load_count; ++k) visit(static_cast<size_t>(w.local[c.loads[k].resource]), c.loads[k].per_byte);
  };
  auto& room = w.room;
  auto& weight = w.weight;
  auto& crossing = w.crossing;
  std::vector<char>& frozen = w.frozen;
  frozen.assign(nc, 0);
  double level = 0;  // the rate of every unfrozen class
  size_t left = nc;
  while (left > 0) {
    // The bottleneck: the resource that fills first. A resource with no unfrozen class left
    // takes no further part (dropped here, the order of the rest kept: ties pick the same one).
    double step = INFINITY;
    size_t bottleneck = 0;
    size_t kept = 0;
    for (size_t k = 0; k < w.active.size(); ++k) {
      const uint32_t j = w.active[k];
      if (crossing[j] == 0) continue;
      w.active[kept++] = j;
      if (room[j] / weight[j] < step) {
        step = room[j] / weight[j];
        bottleneck = j;
      }
    }
    w.active.resize(kept);
    if (step == INFINITY) break;
    level += step;
    w.full.clear();
    for (const uint32_t j : w.active) {
      room[j] = j == bottleneck ? 0.0 : room[j] - step * weight[j];
      // Full, with a relative tolerance for rounding.
      if (room[j] <= resources_[w.comp_res[j]].capacity * 1e-12) w.full.push_back(j);
    }
    for (const uint32_t j : w.full) {  // freeze the classes on the full resources
      if (crossing[j] == 0) continue;
      for (uint32_t k = w.first[j]; k < w.first[j + 1]; ++k) {
        const uint32_t i = w.on[k];
        if (frozen[i]) continue;
        frozen[i] = 1;
        --left;
        w.rate[i] = level;
        const double n = class_weight(cls(i));
        touches(cls(i), [&](size_t q, double per_byte) {
          weight[q] -= n * per_byte;
          --crossing[q];
        });
      }
    }
  }
  apply_rates(now);
}

// Sets the rates the filling found for the component. A class or resource whose rate changes
// is first brought up to now at its old rate; a class's due time moves with its rate.
void FlowNetwork::apply_rates(int64_t now) {
  Scratch& w = scratch_;
  w.load.assign(w.comp_res.size(), 0.0);
  for (size_t i = 0; i < w.comp_cls.size(); ++i) {
    const uint32_t slot = w.comp_cls[i];
    FlowClass& c = classes_[slot];
    const double rate = class_weight(c) * w.rate[i];
    for (uint32_t k = 0; k < c.load_count; ++k) w.load[w.local[c.loads[k].resource]] += rate * c.loads[k].per_byte;
    if (w.rate[i] == c.rate) continue;
    c.served_base = served_at(c, now);
    c.since_ps = now;
    c.rate = w.rate[i];
    set_due(slot, now);
  }
  for (size_t j = 0; j < w.comp_res.size(); ++j) {
    Resource& r = resources_[w.comp_res[j]];
    if (w.load[j] == r.load) continue;
    r.bytes += r.load * (static_cast<double>(now - r.since_ps) / 1e12);
    r.since_ps = now;
    r.load = w.load[j];
  }
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
        done_scratch_.push_back(Done{m.seq, m.tail, std::move(m.on_complete)});
        c.members.pop_front();
      } else {
        std::pop_heap(c.members.begin(), c.members.end(), later);
        Member& m = c.members.back();
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
  for (uint32_t k = 0; k < c.load_count; ++k) std::erase(res_classes_[c.loads[k].resource], slot);
  touch(c);
  c.live = false;
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
  std::sort(done.begin(), done.end(), [](const Done& a, const Done& b) { return a.seq < b.seq; });
  // Merged classes keep their rates until one drains or a new one forms.
  if (!seeds_.empty()) reallocate();
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
