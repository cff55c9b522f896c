#include "net/fabric_topology.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {

FabricTopology::FabricTopology(const NetConfig& config) : cfg_(config) {
  per_node_ = cfg_.gpus_per_node;
  rails_ = cfg_.rails();
  nodes_ = cfg_.gpus / per_node_;
  leaf_down_ = leaf_downlinks(cfg_.fabric_switch_ports, cfg_.fabric_oversubscription);
  const int nics_per_rail = nodes_ * (per_node_ / rails_);
  leaves_per_rail_ = (nics_per_rail + leaf_down_ - 1) / leaf_down_;
  spines_per_plane_ = leaf_uplinks(cfg_.fabric_switch_ports, cfg_.fabric_oversubscription);
  planes_ = cfg_.fabric_planes == FabricPlanes::PerRail ? rails_ : 1;
  for (int g = 0; g < cfg_.gpus; ++g) {
    for (const Kind k : {Kind::PcieUp, Kind::PcieDown, Kind::NicTx, Kind::NicRx, Kind::NicMessages}) links_.push_back({k, g, 0});
  }
  for (int l = 0; l < leaves(); ++l) {
    // Its uplinks, in the order of the spines it reaches (spine ids count plane by plane).
    const int first = planes_ == 1 ? 0 : l / leaves_per_rail_ * spines_per_plane_;
    for (int s = 0; s < spines_per_plane_; ++s) {
      links_.push_back({Kind::LeafToSpine, l, first + s});
      links_.push_back({Kind::SpineToLeaf, l, first + s});
    }
  }
}

uint32_t FabricTopology::spine_link(Kind kind, int leaf, int spine) const {
  const uint32_t base = static_cast<uint32_t>(cfg_.gpus) * 5;
  const uint32_t uplink = static_cast<uint32_t>(spine % spines_per_plane_);
  return base + (static_cast<uint32_t>(leaf) * static_cast<uint32_t>(spines_per_plane_) + uplink) * 2 +
         (kind == Kind::SpineToLeaf ? 1u : 0u);
}

int FabricTopology::spine_for(int src, int dst) const {
  // splitmix64 finaliser over the pair: deterministic, spreads neighbouring pairs.
  uint64_t x = static_cast<uint64_t>(src) * 0x10000u + static_cast<uint64_t>(dst);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  const int plane = planes_ == 1 ? 0 : rail_of(src);
  return plane * spines_per_plane_ + static_cast<int>(x % static_cast<uint64_t>(spines_per_plane_));
}

FabricTopology::Route FabricTopology::route(int src, int dst) const {
  if (planes_ > 1 && rail_of(src) != rail_of(dst)) {
    throw UserError("net.fabric_planes",
                    fmt::format("gpu{} (plane {}) -> gpu{} (plane {}) on another node: planes share no switch; the "
                                "system must forward it over NVLink to the destination's plane first (NCCL with "
                                "net.nccl_pxn, DeepEP's normal kernels, hub.internode.route = \"rail\")",
                                src, rail_of(src), dst, rail_of(dst)));
  }
  Route r;
  r.links = {gpu_link(Kind::NicMessages, src), gpu_link(Kind::PcieUp, src), gpu_link(Kind::NicTx, src)};
  const int from = leaf_of(src);
  const int to = leaf_of(dst);
  if (from == to) {
    r.cables = 2;
    r.switches = 1;
  } else {
    const int spine = spine_for(src, dst);
    r.links.push_back(spine_link(Kind::LeafToSpine, from, spine));
    r.links.push_back(spine_link(Kind::SpineToLeaf, to, spine));
    r.cables = 4;
    r.switches = 3;
  }
  r.links.push_back(gpu_link(Kind::NicRx, dst));
  r.links.push_back(gpu_link(Kind::PcieDown, dst));
  return r;
}

double FabricTopology::capacity(uint32_t link) const {
  switch (links_[link].kind) {
    case Kind::PcieUp:
    case Kind::PcieDown:
      return static_cast<double>(cfg_.pcie_bandwidth.bytes_per_second());
    case Kind::NicTx:
    case Kind::NicRx:
      return static_cast<double>(cfg_.nic_bandwidth.bytes_per_second());
    case Kind::NicMessages:
      return cfg_.nic_message_rate;
    case Kind::LeafToSpine:
    case Kind::SpineToLeaf:
      break;
  }
  return static_cast<double>(cfg_.fabric_link_bandwidth.bytes_per_second());
}

std::string FabricTopology::name_from(uint32_t link) const {
  const Link& l = links_[link];
  switch (l.kind) {
    case Kind::PcieUp:
    case Kind::NicMessages:
      return fmt::format("gpu{}", l.a);
    case Kind::PcieDown:
    case Kind::NicTx:
      return fmt::format("nic{}", l.a);
    case Kind::NicRx:
    case Kind::LeafToSpine:
      return l.kind == Kind::NicRx ? fmt::format("leaf{}", leaf_of(l.a)) : fmt::format("leaf{}", l.a);
    case Kind::SpineToLeaf:
      break;
  }
  return fmt::format("spine{}", l.b);
}

std::string FabricTopology::name_to(uint32_t link) const {
  const Link& l = links_[link];
  switch (l.kind) {
    case Kind::PcieUp:
    case Kind::NicRx:
      return fmt::format("nic{}", l.a);
    case Kind::NicMessages:
      return fmt::format("nic{}.messages", l.a);
    case Kind::PcieDown:
      return fmt::format("gpu{}", l.a);
    case Kind::NicTx:
      return fmt::format("leaf{}", leaf_of(l.a));
    case Kind::LeafToSpine:
      return fmt::format("spine{}", l.b);
    case Kind::SpineToLeaf:
      break;
  }
  return fmt::format("leaf{}", l.a);
}

}  // namespace moehub
