#include "net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

namespace moehub {

FlowNetwork::FlowNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace)
    : TransferNetwork(sim, std::max(config.gpus, 0)), cfg_(config), sim_(sim), trace_(trace) {
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
}

namespace {
// Heap order of a class's members: earliest finish first, then start order.
constexpr auto later = [](const auto& a, const auto& b) {
  return a.finish != b.finish ? a.finish > b.finish : a.seq > b.seq;
};
}  // namespace

void FlowNetwork::transfer(int src, int dst, uint64_t bytes, int /*priority*/, Callback on_complete) {
  if (src < 0 || dst < 0 || src >= cfg_.gpus || dst >= cfg_.gpus) throw std::logic_error("transfer: GPU index out of range");
  if (bytes == 0 || src == dst) {
    sim_.schedule_in(Time::zero(), std::move(on_complete));
    return;
  }
  advance();
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
  FlowClass& c = class_for(src, dst, wire_per_byte, ack_per_byte);
  const Time tail = this->tail(src, dst, bytes);
  // A merged class serves its messages one after another: this one's payload follows the
  // latest member's, and the class's rate does not change while it has members.
  const bool merged = cfg_.flow_merge_pairs && !c.members.empty();
  const double start = merged ? c.last_finish : c.served;
  c.last_finish = start + static_cast<double>(bytes);
  c.members.push_back(Member{c.last_finish, next_seq_++, tail, std::move(on_complete)});
  std::push_heap(c.members.begin(), c.members.end(), later);
  c.next_finish = c.members.front().finish;
  if (merged) return;
  // Rates matter only once time moves: flows that start at the same instant (every hub
  // issuing on the same clock edge) share one reallocation, at the end of that instant.
  if (!unsettled_) {
    unsettled_ = true;
    sim_.schedule_in(Time::zero(), [this] { settle(); });
  }
}

void FlowNetwork::settle() {
  if (!unsettled_) return;
  unsettled_ = false;
  reallocate();
  schedule_next();
}

FlowNetwork::FlowClass& FlowNetwork::class_for(int src, int dst, double wire_per_byte, double ack_per_byte) {
  std::vector<uint32_t>& same_pair = pair_classes(src, dst);
  for (const uint32_t i : same_pair) {
    FlowClass& c = classes_[i];
    if (c.wire_per_byte == wire_per_byte && c.ack_per_byte == ack_per_byte) return c;
  }
  same_pair.push_back(static_cast<uint32_t>(classes_.size()));
  FlowClass& c = classes_.emplace_back();
  c.src = src;
  c.dst = dst;
  c.wire_per_byte = wire_per_byte;
  c.ack_per_byte = ack_per_byte;
  route(c);
  return c;
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

// Moves every flow forward to now at its current rate.
void FlowNetwork::advance() {
  const Time now = sim_.now();
  const double dt = (now - last_update_).seconds();
  last_update_ = now;
  if (dt <= 0) return;
  for (auto& c : classes_) c.served += c.rate * dt;
  for (auto& r : resources_) r.bytes += r.load * dt;
}

// Progressive filling: raise every unfrozen flow's rate together until some resource is full,
// freeze the flows crossing it, repeat (max-min fairness in payload rate). Each resource keeps
// the weight of the unfrozen classes crossing it, reduced as they freeze, so a round costs one
// pass over the resources rather than over the classes.
void FlowNetwork::reallocate() {
  const size_t nc = classes_.size();
  const size_t nr = resources_.size();
  // Scratch kept between calls: this runs at every flow start and completion.
  Scratch& w = scratch_;
  w.room.resize(nr);
  w.weight.assign(nr, 0.0);
  w.crossing.assign(nr, 0);  // unfrozen classes that load the resource
  w.first.assign(nr + 1, 0);  // classes on resource r: on[first[r] .. first[r + 1])
  for (size_t r = 0; r < nr; ++r) w.room[r] = resources_[r].capacity;
  const auto touches = [](const FlowClass& c, auto&& visit) {
    for (uint32_t k = 0; k < c.load_count; ++k) visit(static_cast<size_t>(c.loads[k].resource), c.loads[k].per_byte);
  };
  for (size_t i = 0; i < nc; ++i) {
    FlowClass& c = classes_[i];
    c.rate = 0;
    const double n = class_weight(c);
    touches(c, [&](size_t r, double per_byte) {
      w.weight[r] += n * per_byte;
      ++w.crossing[r];
    });
  }
  // Only resources some class loads take part in the rounds (a fat tree has many idle links).
  w.active.clear();
  for (size_t r = 0; r < nr; ++r) {
    w.first[r + 1] = w.first[r] + w.crossing[r];
    if (w.crossing[r] > 0) w.active.push_back(static_cast<uint32_t>(r));
  }
  w.on.resize(w.first[nr]);
  w.fill.assign(w.first.begin(), w.first.end() - 1);
  for (size_t i = 0; i < nc; ++i) {
    touches(classes_[i], [&](size_t r, double) { w.on[w.fill[r]++] = static_cast<uint32_t>(i); });
  }
  auto& room = w.room;
  auto& weight = w.weight;
  auto& crossing = w.crossing;
  std::vector<char>& frozen = w.frozen;
  frozen.assign(nc, 0);
  double level = 0;  // the rate of every unfrozen class
  size_t left = nc;
  while (left > 0) {
    double step = INFINITY;
    size_t bottleneck = 0;
    for (const uint32_t r : w.active) {
      if (crossing[r] > 0 && room[r] / weight[r] < step) {
        step = room[r] / weight[r];
        bottleneck = r;
      }
    }
    if (step == INFINITY) break;
    level += step;
    for (const uint32_t r : w.active) {
      if (crossing[r] > 0) room[r] = r == bottleneck ? 0.0 : room[r] - step * weight[r];
    }
    // Freeze the classes on resources that are now full (relative tolerance for rounding).
    for (const uint32_t r : w.active) {
      if (crossing[r] == 0 || room[r] > resources_[r].capacity * 1e-12) continue;
      for (uint32_t k = w.first[r]; k < w.first[r + 1]; ++k) {
        const uint32_t i = w.on[k];
        if (frozen[i]) continue;
        frozen[i] = 1;
        --left;
        FlowClass& c = classes_[i];
        c.rate = level;
        const double n = class_weight(c);
        touches(c, [&](size_t q, double per_byte) {
          weight[q] -= n * per_byte;
          --crossing[q];
        });
      }
    }
    // A resource with no unfrozen class left takes no further part: later rounds skip it
    // (the order of the rest is kept, so ties pick the same bottleneck).
    std::erase_if(w.active, [&](uint32_t r) { return crossing[r] == 0; });
  }
  const int64_t now = sim_.now().ps();
  for (auto& r : resources_) r.load = 0;
  for (const auto& c : classes_) {
    const double rate = class_weight(c) * c.rate;
    touches(c, [&](size_t r, double per_byte) { resources_[r].load += rate * per_byte; });
  }
  account_busy(now);
}

// Opens a resource's busy period when it gains load and closes it (statistics, timeline) when
// it loses all of it.
void FlowNetwork::account_busy(int64_t now) {
  for (size_t i = 0; i < resources_.size(); ++i) {
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
  double soonest = INFINITY;
  for (const auto& c : classes_) {
    if (c.rate > 0) soonest = std::min(soonest, std::max(0.0, c.next_finish - c.served) / c.rate);
  }
  if (soonest == INFINITY) return;
  const Time at = Time::from_ps(static_cast<int64_t>(std::ceil(soonest * 1e12)));
  const uint64_t gen = ++generation_;
  pending_ = sim_.schedule_in(at, [this, gen] { on_event(gen); });
}

void FlowNetwork::on_event(uint64_t generation) {
  if (generation != generation_) return;
  pending_ = EventHandle{};
  advance();
  std::vector<Done>& done = done_scratch_;
  bool emptied = false;
  for (FlowClass& c : classes_) {
    while (!c.members.empty() && c.next_finish - c.served <= std::max(1e-6, c.rate * 1e-12)) {
      std::pop_heap(c.members.begin(), c.members.end(), later);
      Member& m = c.members.back();
      done.push_back(Done{m.seq, m.tail, std::move(m.on_complete)});
      c.members.pop_back();
      c.next_finish = c.members.empty() ? INFINITY : c.members.front().finish;
      ++flows_completed_;
    }
    emptied = emptied || c.members.empty();
  }
  if (emptied) {
    for (const FlowClass& c : classes_) pair_classes(c.src, c.dst).clear();
    std::erase_if(classes_, [](const FlowClass& c) { return c.members.empty(); });
    for (size_t i = 0; i < classes_.size(); ++i) pair_classes(classes_[i].src, classes_[i].dst).push_back(static_cast<uint32_t>(i));
  }
  std::sort(done.begin(), done.end(), [](const Done& a, const Done& b) { return a.seq < b.seq; });
  // Merged classes keep their rates until one drains or a new one forms.
  if (!cfg_.flow_merge_pairs || emptied || unsettled_) reallocate();
  unsettled_ = false;
  schedule_next();
  for (Done& d : done) sim_.schedule_in(d.tail, std::move(d.on_complete));
  done.clear();
}

std::vector<double> FlowNetwork::rates() {
  settle();
  std::vector<std::pair<uint64_t, double>> by_start;
  for (const auto& c : classes_) {
    for (const auto& m : c.members) by_start.emplace_back(m.seq, c.rate);
  }
  std::sort(by_start.begin(), by_start.end());
  std::vector<double> r;
  for (const auto& [seq, rate] : by_start) r.push_back(rate);
  return r;
}

nlohmann::json FlowNetwork::stats() const {
  const Time elapsed = sim_.now();
  const double dt = (elapsed - last_update_).seconds();
  nlohmann::json links = nlohmann::json::array();
  const auto link = [&](const Resource& r, const std::string& from, const std::string& to) {
    const double bytes = (r.bytes + r.load * dt) / cfg_.planes;
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
  if (fabric_) fabric_stats(links, out, dt);
  out["links"] = std::move(links);
  return out;
}

// The fabric's links after the NVLink ones (each direction of each link; the message engine
// in packets), and the RDMA totals.
void FlowNetwork::fabric_stats(nlohmann::json& links, nlohmann::json& out, double dt) const {
  const Time elapsed = sim_.now();
  const size_t base = static_cast<size_t>(cfg_.gpus) * 2;
  for (uint32_t l = 0; l < fabric_->links().size(); ++l) {
    const Resource& r = resources_[base + l];
    const double bytes = r.bytes + r.load * dt;
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
