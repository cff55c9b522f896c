#pragma once
// The scale-out fabric: nodes of `gpus_per_node` GPUs on one NVSwitch domain, each GPU with
// its own NIC behind a PCIe link, the NICs in a rail-optimised two-tier fat tree (one leaf
// group per rail: the NIC of local GPU i of every node goes to a leaf of rail i % rails (rails
// = GPUs per node unless `net.fabric_rails` says fewer); every leaf has one uplink to
// every spine, or with `net.fabric_planes = "per-rail"` to every spine of its rail's own plane,
// DeepSeek-V3's multi-plane fat tree, where a transfer between rails of different nodes has no
// path: route() refuses it, and the software must first forward it over NVLink). A transfer between nodes crosses GPU -> PCIe -> NIC -> leaf (-> spine -> leaf)
// -> NIC -> PCIe -> GPU; transfers inside a node stay on NVLink (not part of this class).
// The layout is pure arithmetic: no state beyond the configuration.

#include <cstdint>
#include <string>
#include <vector>

#include "net/net_config.h"

namespace moehub {

class FabricTopology {
 public:
  // What a link is, for its capacity and its name in statistics.
  enum class Kind { PcieUp, PcieDown, NicTx, NicRx, NicMessages, LeafToSpine, SpineToLeaf };
  struct Link {
    Kind kind;
    int a = 0;  // the GPU (per-GPU links) or the leaf (leaf-spine links)
    int b = 0;  // the spine (leaf-spine links)
  };
  // One inter-node route: the links it loads (message engine first) and its hop counts.
  struct Route {
    std::vector<uint32_t> links;
    int cables = 0;    // NIC-leaf and leaf-spine cables crossed
    int switches = 0;  // fabric switches traversed
  };

  // Precondition: config.validate() passed and config.gpus_per_node > 0.
  explicit FabricTopology(const NetConfig& config);

  int nodes() const { return nodes_; }
  int rails() const { return rails_; }
  int leaves() const { return rails_ * leaves_per_rail_; }
  int spines() const { return spines_per_plane_ * planes_; }
  int planes() const { return planes_; }
  int node_of(int gpu) const { return gpu / per_node_; }
  int rail_of(int gpu) const { return gpu % per_node_ % rails_; }
  // A rail's NICs in node order, then local index order within a node (one per GPU of the rail).
  int leaf_of(int gpu) const {
    const int nic = node_of(gpu) * (per_node_ / rails_) + gpu % per_node_ / rails_;
    return rail_of(gpu) * leaves_per_rail_ + nic / leaf_down_;
  }
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  // The spine ECMP picks for a flow src -> dst among those its leaf reaches (a fixed hash of
  // the pair: one path per pair, as a hash of an RDMA connection's header fields gives).
  int spine_for(int src, int dst) const;

  const std::vector<Link>& links() const { return links_; }
  // Capacity of a link: bytes per second, or messages per second for a NIC's message engine.
  double capacity(uint32_t link) const;
  std::string name_from(uint32_t link) const;
  std::string name_to(uint32_t link) const;
  // Precondition: !same_node(src, dst). Throws UserError for a transfer between planes.
  Route route(int src, int dst) const;

  // Leaf ports toward NICs and toward spines for a radix and an oversubscription (down:up).
  static int leaf_downlinks(int radix, int oversubscription) { return radix / (oversubscription + 1) * oversubscription; }
  static int leaf_uplinks(int radix, int oversubscription) { return radix / (oversubscription + 1); }

 private:
  uint32_t gpu_link(Kind kind, int gpu) const { return static_cast<uint32_t>(gpu) * 5 + static_cast<uint32_t>(kind); }
  uint32_t spine_link(Kind kind, int leaf, int spine) const;

  NetConfig cfg_;
  int nodes_ = 0, per_node_ = 0, rails_ = 0, leaf_down_ = 0, leaves_per_rail_ = 0;
  int spines_per_plane_ = 0;  // the spines one leaf reaches (one uplink each)
  int planes_ = 1;            // 1: shared spines; rails: one plane per rail
  std::vector<Link> links_;
};

}  // namespace moehub
