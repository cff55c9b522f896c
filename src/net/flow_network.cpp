#include "net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

namespace moehub {

FlowNetwork::FlowNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace)
    : cfg_(config), sim_(sim), trace_(trace) {
  cfg_.validate();
  resources_.resize(static_cast<size_t>(cfg_.gpus) * 2);
  for (auto& r : resources_) r.capacity = static_cast<double>(cfg_.gpu_bandwidth.bytes_per_second());
}

void FlowNetwork::transfer(int src, int dst, uint64_t bytes, int /*priority*/, Callback on_complete) {
  if (src < 0 || dst < 0 || src >= cfg_.gpus || dst >= cfg_.gpus) throw std::logic_error("transfer: GPU index out of range");
  if (bytes == 0 || src == dst) {
    sim_.schedule_in(Time::zero(), std::move(on_complete));
    return;
  }
  advance();
  Flow f;
  f.src = src;
  f.dst = dst;
  f.remaining = static_cast<double>(bytes);
  f.wire_per_byte = static_cast<double>(cfg_.wire_bytes(bytes)) / static_cast<double>(bytes);
  f.ack_per_byte = cfg_.write_ack ? static_cast<double>(cfg_.packets_for(bytes) * cfg_.wire_flits(0) * cfg_.flit_bytes) /
                                        static_cast<double>(bytes)
                                  : 0.0;
  const uint64_t rest = bytes % cfg_.max_payload_bytes;
  f.last_payload = static_cast<uint32_t>(rest ? rest : cfg_.max_payload_bytes);
  f.on_complete = std::move(on_complete);
  flows_.push_back(std::move(f));
  reallocate();
  schedule_next();
}

// Moves every flow forward to now at its current rate.
void FlowNetwork::advance() {
  const Time now = sim_.now();
  const double dt = (now - last_update_).seconds();
  last_update_ = now;
  if (dt <= 0) return;
  for (auto& f : flows_) f.remaining = std::max(0.0, f.remaining - f.rate * dt);
  for (auto& r : resources_) r.bytes += r.load * dt;
}

// Progressive filling: raise every unfrozen flow's rate together until some resource is full,
// freeze the flows crossing it, repeat (max-min fairness in payload rate).
void FlowNetwork::reallocate() {
  const size_t nf = flows_.size();
  std::vector<double> room(resources_.size());
  for (size_t r = 0; r < resources_.size(); ++r) room[r] = resources_[r].capacity;
  std::vector<char> frozen(nf, 0);
  for (auto& f : flows_) f.rate = 0;
  std::vector<double> weight(resources_.size());
  size_t left = nf;
  while (left > 0) {
    std::fill(weight.begin(), weight.end(), 0.0);
    for (size_t i = 0; i < nf; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[i];
      weight[egress(f.src)] += f.wire_per_byte;
      weight[ingress(f.dst)] += f.wire_per_byte;
      weight[egress(f.dst)] += f.ack_per_byte;
      weight[ingress(f.src)] += f.ack_per_byte;
    }
    double step = INFINITY;
    size_t bottleneck = 0;
    for (size_t r = 0; r < resources_.size(); ++r) {
      if (weight[r] > 0 && room[r] / weight[r] < step) {
        step = room[r] / weight[r];
        bottleneck = r;
      }
    }
    room[bottleneck] = 0;
    for (size_t r = 0; r < resources_.size(); ++r) {
      if (r != bottleneck) room[r] -= step * weight[r];
    }
    for (size_t i = 0; i < nf; ++i) {
      if (!frozen[i]) flows_[i].rate += step;
    }
    // Freeze flows on resources that are now full (relative tolerance for rounding).
    for (size_t i = 0; i < nf; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[i];
      const auto full = [&](size_t r, double w) { return w > 0 && room[r] <= resources_[r].capacity * 1e-12; };
      if (full(egress(f.src), f.wire_per_byte) || full(ingress(f.dst), f.wire_per_byte) ||
          full(egress(f.dst), f.ack_per_byte) || full(ingress(f.src), f.ack_per_byte)) {
        frozen[i] = 1;
        --left;
      }
    }
  }
  const int64_t now = sim_.now().ps();
  for (auto& r : resources_) r.load = 0;
  for (const auto& f : flows_) {
    resources_[egress(f.src)].load += f.rate * f.wire_per_byte;
    resources_[ingress(f.dst)].load += f.rate * f.wire_per_byte;
    resources_[egress(f.dst)].load += f.rate * f.ack_per_byte;
    resources_[ingress(f.src)].load += f.rate * f.ack_per_byte;
  }
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
  for (const auto& f : flows_) {
    if (f.rate > 0) soonest = std::min(soonest, f.remaining / f.rate);
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
  // A flow whose payload has left the source completes once its last packet has crossed the
  // switch and reached the destination (the packet model's pipeline tail).
  std::vector<Callback> done;
  std::vector<Time> tails;
  for (size_t i = 0; i < flows_.size();) {
    Flow& f = flows_[i];
    if (f.remaining <= std::max(1e-6, f.rate * 1e-12)) {
      const Time ser = cfg_.plane_bandwidth().transfer_time(static_cast<uint64_t>(cfg_.wire_flits(f.last_payload)) *
                                                            cfg_.flit_bytes);
      tails.push_back(ser + cfg_.gpu_switch_latency * 2 + cfg_.switch_latency);
      done.push_back(std::move(f.on_complete));
      flows_.erase(flows_.begin() + static_cast<std::ptrdiff_t>(i));
      ++flows_completed_;
    } else {
      ++i;
    }
  }
  reallocate();
  schedule_next();
  for (size_t i = 0; i < done.size(); ++i) sim_.schedule_in(tails[i], std::move(done[i]));
}

std::vector<double> FlowNetwork::rates() const {
  std::vector<double> r;
  for (const auto& f : flows_) r.push_back(f.rate);
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
