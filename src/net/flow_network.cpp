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
  const double wire_per_byte = static_cast<double>(cfg_.wire_bytes(bytes)) / static_cast<double>(bytes);
  const double ack_per_byte =
      cfg_.write_ack
          ? static_cast<double>(cfg_.packets_for(bytes) * cfg_.wire_flits(0) * cfg_.flit_bytes) / static_cast<double>(bytes)
          : 0.0;
  FlowClass& c = class_for(src, dst, wire_per_byte, ack_per_byte);
  // Once its payload has left, the flow completes when its last packet has crossed the switch
  // and reached the destination (the packet model's pipeline tail).
  const uint64_t rest = bytes % cfg_.max_payload_bytes;
  const uint32_t last_payload = static_cast<uint32_t>(rest ? rest : cfg_.max_payload_bytes);
  const Time tail = cfg_.plane_bandwidth().transfer_time(static_cast<uint64_t>(cfg_.wire_flits(last_payload)) * cfg_.flit_bytes) +
                    cfg_.gpu_switch_latency * 2 + cfg_.switch_latency;
  c.members.push_back(Member{c.served + static_cast<double>(bytes), next_seq_++, tail, std::move(on_complete)});
  std::push_heap(c.members.begin(), c.members.end(), later);
  c.next_finish = c.members.front().finish;
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
  return c;
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
  const auto touches = [&](const FlowClass& c, auto&& visit) {
    if (c.wire_per_byte > 0) {
      visit(egress(c.src), c.wire_per_byte);
      visit(ingress(c.dst), c.wire_per_byte);
    }
    if (c.ack_per_byte > 0) {
      visit(egress(c.dst), c.ack_per_byte);
      visit(ingress(c.src), c.ack_per_byte);
    }
  };
  for (size_t i = 0; i < nc; ++i) {
    FlowClass& c = classes_[i];
    c.rate = 0;
    const double n = static_cast<double>(c.members.size());
    touches(c, [&](size_t r, double per_byte) {
      w.weight[r] += n * per_byte;
      ++w.crossing[r];
    });
  }
  for (size_t r = 0; r < nr; ++r) w.first[r + 1] = w.first[r] + w.crossing[r];
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
    for (size_t r = 0; r < nr; ++r) {
      if (crossing[r] > 0 && room[r] / weight[r] < step) {
        step = room[r] / weight[r];
        bottleneck = r;
      }
    }
    if (step == INFINITY) break;
    level += step;
    for (size_t r = 0; r < nr; ++r) {
      if (crossing[r] > 0) room[r] = r == bottleneck ? 0.0 : room[r] - step * weight[r];
    }
    // Freeze the classes on resources that are now full (relative tolerance for rounding).
    for (size_t r = 0; r < nr; ++r) {
      if (crossing[r] == 0 || room[r] > resources_[r].capacity * 1e-12) continue;
      for (uint32_t k = w.first[r]; k < w.first[r + 1]; ++k) {
        const uint32_t i = w.on[k];
        if (frozen[i]) continue;
        frozen[i] = 1;
        --left;
        FlowClass& c = classes_[i];
        c.rate = level;
        const double n = static_cast<double>(c.members.size());
        touches(c, [&](size_t q, double per_byte) {
          weight[q] -= n * per_byte;
          --crossing[q];
        });
      }
    }
  }
  const int64_t now = sim_.now().ps();
  for (auto& r : resources_) r.load = 0;
  for (const auto& c : classes_) {
    const double rate = static_cast<double>(c.members.size()) * c.rate;
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
      if (trace_) {
        const int gpu = static_cast<int>(i / 2);
        trace_->span(gpu, trace_->track(gpu, i % 2 ? "ingress" : "egress"), "busy", "net", Time::from_ps(r.busy_since),
                     Time::from_ps(now));
      }
      r.busy_since = -1;
    }
  }
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
  unsettled_ = false;
  reallocate();
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
  return {{"fidelity", "flow"}, {"elapsed_ps", elapsed.ps()}, {"flows_completed", flows_completed_}, {"links", links}};
}

void FlowNetwork::flush_trace() {}

}  // namespace moehub
