// PacketNetwork's statistics, trace and conservation checks (split from packet_network.cpp to
// keep files short).
#include <fmt/format.h>

#include "net/packet_network.h"
#include "net/scaleout_packet.h"

namespace moehub {

nlohmann::json PacketNetwork::stats() const {
  const Time elapsed = sim_.now();
  nlohmann::json links = nlohmann::json::array();
  for (uint32_t g = 0; g < n_; ++g) {
    for (uint32_t s = 0; s < s_; ++s) {
      links.push_back(uplinks_[g * s_ + s].stats.to_json(fmt::format("gpu{}", g), fmt::format("sw{}", s), elapsed));
    }
  }
  for (uint32_t s = 0; s < s_; ++s) {
    for (uint32_t d = 0; d < n_; ++d) {
      links.push_back(outputs_[s * n_ + d].stats.to_json(fmt::format("sw{}", s), fmt::format("gpu{}", d), elapsed));
    }
  }
  nlohmann::json ports = nlohmann::json::array();
  for (uint32_t g = 0; g < n_; ++g) {
    const Port& p = ports_[g];
    ports.push_back({{"gpu", g}, {"injected_packets", p.injected}, {"delivered_packets", p.delivered},
                     {"egress_peak_flits", p.peak_flits}});
  }
  nlohmann::json by_kind = nlohmann::json::object();
  for (size_t k = 0; k < 6; ++k) by_kind[packet_kind_name(static_cast<PacketKind>(k))] = delivered_by_kind_[k];
  nlohmann::json out = {{"fidelity", "packet"},
                        {"elapsed_ps", elapsed.ps()},
                        {"packets_injected", injected_packets_},
                        {"packets_delivered", delivered_packets_},
                        {"acks_delivered", acks_delivered_},
                        {"packets_delivered_by_kind", by_kind}};
  if (fabric_) fabric_->stats(links, out, elapsed);
  out["links"] = std::move(links);
  out["ports"] = std::move(ports);
  return out;
}

void PacketNetwork::flush_trace() {
  if (!trace_) return;
  if (fabric_) fabric_->flush_trace();
  for (uint32_t g = 0; g < n_; ++g) {
    for (uint32_t s = 0; s < s_; ++s) {
      const int gpu = static_cast<int>(g);
      uplinks_[g * s_ + s].stats.flush_span(trace_, gpu, trace_->track(gpu, fmt::format("link to sw{}", s)));
    }
  }
  for (uint32_t s = 0; s < s_; ++s) {
    for (uint32_t d = 0; d < n_; ++d) {
      const int pid = 1000 + static_cast<int>(s);
      outputs_[s * n_ + d].stats.flush_span(trace_, pid, trace_->track(pid, fmt::format("link to gpu{}", d)));
    }
  }
}

std::vector<std::string> PacketNetwork::conservation_violations() const {
  std::vector<std::string> v;
  if (injected_packets_ != delivered_packets_) {
    v.push_back(fmt::format("{} packets injected, {} delivered", injected_packets_, delivered_packets_));
  }
  const auto empty = [](const std::vector<Queue>& qs) {
    for (const Queue& q : qs) {
      if (!q.empty()) return false;
    }
    return true;
  };
  if (!empty(egress_) || !empty(voq_) || !empty(ingress_)) v.push_back("a packet is still queued in the fabric");
  size_t free_slots = 0;
  for (uint32_t id = free_head_; id != kNil; id = pool_[id].next) ++free_slots;
  if (free_slots != pool_.size()) v.push_back(fmt::format("{} of {} packet slots not freed", pool_.size() - free_slots, pool_.size()));
  for (const Uplink& u : uplinks_) {
    if (!u.credits.all_returned()) {
      v.push_back("an uplink's credits were not all returned");
      break;
    }
  }
  for (const Output& o : outputs_) {
    if (!o.credits.all_returned()) {
      v.push_back("a switch output's credits were not all returned");
      break;
    }
  }
  if (fabric_) fabric_->conservation_violations(v);
  return v;
}

}  // namespace moehub
