// The scale-out fabric: fat-tree layout, rail and ECMP routing, and flows between nodes timed by
// hand (test::cluster_like gives every number).

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "net/collectives.h"
#include "net/fabric_topology.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "sim/error.h"

namespace moehub {
namespace {

// 1 MiB = 256 MTU packets: 1048576 + 256 x 26 = 1055232 wire bytes, 21104.64 ns at 50 GB/s.
constexpr double kMiBAtNicPs = 1055232.0 / 50e9 * 1e12;
// The last packet, 4096 + 26 B at 50 GB/s: 82.44 ns.
constexpr double kLastPacketPs = 82440;

TEST(Fabric, NicToNicOnOneLeafIsNicBoundWithTheOneHopLatency) {
  Simulator sim;
  // 2 GPUs per node: GPU 0 (node 0, rail 0) to GPU 2 (node 1, rail 0) meet on rail 0's leaf.
  FlowNetwork net(test::cluster_like(4, 2), sim);
  Time done;
  net.transfer(0, 2, 1 << 20, 0, [&] { done = sim.now(); });
  ASSERT_EQ(net.rates().size(), 1u);
  EXPECT_NEAR(net.rates()[0], 50e9 * 1048576 / 1055232, 1e-3);
  sim.run();
  // PCIe and NIC 300 ns each at both ends, 2 cables of 50 ns, one 150 ns switch.
  EXPECT_NEAR(static_cast<double>(done.ps()), kMiBAtNicPs + kLastPacketPs + 1200000 + 100000 + 150000, 1.0);
  const auto stats = net.stats();
  EXPECT_EQ(stats["nodes"], 2);
  EXPECT_EQ(stats["rdma_payload_bytes"], 1u << 20);
  EXPECT_EQ(stats["rdma_messages"], 1u);
  EXPECT_EQ(stats["rdma_packets"], 256u);
}

TEST(Fabric, CrossRailGoesOverASpineWithTwoMoreCablesAndSwitches) {
  Simulator sim;
  FlowNetwork net(test::cluster_like(4, 2), sim);
  Time done;
  net.transfer(0, 3, 1 << 20, 0, [&] { done = sim.now(); });  // rail 0 to rail 1
  sim.run();
  EXPECT_NEAR(static_cast<double>(done.ps()), kMiBAtNicPs + kLastPacketPs + 1200000 + 200000 + 450000, 1.0);
}

TEST(Fabric, InsideANodeTheFlowStaysOnNvlink) {
  Simulator sim;
  FlowNetwork net(test::cluster_like(4, 2), sim);
  Time done;
  net.transfer(0, 1, 1 << 20, 0, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done.ps(), 5898240 + 2880 + 600000);  // as FlowNetwork.LoneTransfer... on one board
  EXPECT_EQ(net.stats()["rdma_messages"], 0u);
}

// A read request is a header-only message: no payload to share the links, but its header
// crosses the path (issue 23): 26 B at the NIC (0.52 ns) plus the path's latencies.
TEST(Fabric, AHeaderOnlyMessageTakesItsHeadersTripOnItsPath) {
  struct Arrivals final : PacketReceiver {
    void deliver(Packet&& p) override { at.push_back({p.src, now()}); }
    std::function<Time()> now;
    std::vector<std::pair<int, Time>> at;
  };
  Simulator sim;
  FlowNetwork net(test::cluster_like(4, 2), sim);
  Arrivals rx;
  rx.now = [&] { return sim.now(); };
  for (int g = 0; g < 4; ++g) net.set_receiver(g, &rx);
  const auto request = [&](int src, int dst) {
    Packet p;
    p.src = src;
    p.dst = dst;
    p.payload_bytes = 0;
    p.kind = PacketKind::ReadRequest;
    net.send(std::move(p));
  };
  request(0, 2);  // rail 0's leaf: 2 x 300 (PCIe) + 2 x 300 (NIC) + 2 x 50 + 150 ns
  request(1, 0);  // NVLink: one 16 B header flit at 50 GB/s a plane (320 ps) + 250 + 100 + 250 ns
  request(3, 0);  // node 1 rail 1 to node 0 rail 0, over a spine: 4 cables, 3 switches
  sim.run();
  ASSERT_EQ(rx.at.size(), 3u);
  EXPECT_EQ(rx.at[0], std::make_pair(1, Time::from_ps(320 + 600000)));
  EXPECT_EQ(rx.at[1], std::make_pair(0, Time::from_ps(520 + 1200000 + 100000 + 150000)));
  EXPECT_EQ(rx.at[2], std::make_pair(3, Time::from_ps(520 + 1200000 + 200000 + 450000)));
  // Latency only: the headers load no link, and no window slot is left taken.
  EXPECT_EQ(net.stats()["rdma_messages"], 0u);
  EXPECT_TRUE(net.conservation_violations().empty());
}

TEST(Fabric, RailPlacementAndEcmpOnAKnownCase) {
  // 20 GPUs in 10 nodes of 2; 8-port leaves, non-blocking: 4 NICs per leaf, so each rail has 3
  // leaves (nodes 0-3, 4-7, 8-9) and there are 4 spines.
  const FabricTopology t(test::cluster_like(20, 2));
  EXPECT_EQ(t.nodes(), 10);
  EXPECT_EQ(t.leaves(), 6);
  EXPECT_EQ(t.spines(), 4);
  EXPECT_EQ(t.leaf_of(0), 0);  // node 0, rail 0
  EXPECT_EQ(t.leaf_of(9), 4);  // node 4, rail 1: rail 1's leaves are 3-5
  EXPECT_EQ(t.leaf_of(19), 5);
  // Same leaf: NIC -> leaf -> NIC, no spine link.
  const FabricTopology::Route near = t.route(0, 2);
  EXPECT_EQ(near.links.size(), 5u);
  EXPECT_EQ(near.switches, 1);
  // Different leaves: the spine is the splitmix64 hash of (src << 16 | dst) mod 4, for (0, 3): 1.
  EXPECT_EQ(t.spine_for(0, 3), 1);
  EXPECT_EQ(t.spine_for(3, 0), 3);
  const FabricTopology::Route far = t.route(0, 3);
  ASSERT_EQ(far.links.size(), 7u);
  EXPECT_EQ(far.switches, 3);
  const auto& up = t.links()[far.links[3]];
  EXPECT_EQ(up.kind, FabricTopology::Kind::LeafToSpine);
  EXPECT_EQ(up.a, 0);
  EXPECT_EQ(up.b, 1);
  EXPECT_EQ(t.name_to(far.links[3]), "spine1");
  // Every spine carries some of GPU 0's 18 remote pairs.
  std::set<int> used;
  for (int d = 2; d < 20; ++d) used.insert(t.spine_for(0, d));
  EXPECT_EQ(used.size(), 4u);
}

// DeepSeek-V3's multi-plane fat tree: the same 20 GPUs, but each rail has its own 4 spines.
TEST(Fabric, PerRailPlanesGiveEachRailItsOwnSpinesAndRefuseCrossPlaneRoutes) {
  NetConfig c = test::cluster_like(20, 2);
  c.fabric_planes = FabricPlanes::PerRail;
  const FabricTopology t(c);
  EXPECT_EQ(t.planes(), 2);
  EXPECT_EQ(t.spines(), 8);  // 4 per plane
  EXPECT_EQ(t.leaves(), 6);
  // Rail 0 (plane 0) keeps the shared tree's hash over its 4 spines: (0, 4) hashes like (0, 3)
  // on a 4-spine tree would; rail 1's pairs land on spines 4-7.
  const FabricTopology shared(test::cluster_like(20, 2));
  for (int d = 2; d < 20; d += 2) EXPECT_EQ(t.spine_for(0, d), shared.spine_for(0, d)) << d;
  std::set<int> rail1;
  for (int d = 3; d < 20; d += 2) rail1.insert(t.spine_for(1, d));
  for (const int s : rail1) {
    EXPECT_GE(s, 4);
    EXPECT_LT(s, 8);
  }
  // Rail 1, node 0 (leaf 3) to node 9 (leaf 5): over its plane's spine, named by its global id.
  const FabricTopology::Route far = t.route(1, 19);
  ASSERT_EQ(far.links.size(), 7u);
  const auto& up = t.links()[far.links[3]];
  EXPECT_EQ(up.kind, FabricTopology::Kind::LeafToSpine);
  EXPECT_EQ(up.a, 3);
  EXPECT_EQ(up.b, t.spine_for(1, 19));
  EXPECT_EQ(t.links()[far.links[4]].b, up.b);
  // Same-plane routes take links of the same capacity as the shared tree's.
  EXPECT_EQ(t.capacity(far.links[3]), shared.capacity(shared.route(1, 19).links[3]));
  // Rail 0 to rail 1 on another node: no switch joins the planes.
  try {
    (void)t.route(0, 3);
    ADD_FAILURE() << "a cross-plane route was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.fabric_planes");
  }
  // Inside a node nothing crosses the fabric, and same-rail pairs route as before.
  EXPECT_EQ(t.route(0, 2).links.size(), 5u);
}

// Fewer rails than GPUs per node (NVL72 racks: a rail per GPU position in a 4-GPU tray): 2
// nodes of 4 GPUs on 2 rails; each rail has 2 NICs per node, 4 in all, one 8-port leaf's worth.
TEST(Fabric, FewerRailsThanGpusPerNodeShareARailsLeaf) {
  NetConfig c = test::cluster_like(8, 4);
  c.fabric_rails = 2;
  const FabricTopology t(c);
  EXPECT_EQ(t.rails(), 2);
  EXPECT_EQ(t.leaves(), 2);
  EXPECT_EQ(t.rail_of(2), 0);  // local index 2 % 2
  EXPECT_EQ(t.rail_of(7), 1);
  EXPECT_EQ(t.leaf_of(0), 0);
  EXPECT_EQ(t.leaf_of(6), 0);  // node 1, local 2: rail 0's fourth NIC
  EXPECT_EQ(t.leaf_of(5), 1);
  // Same rail across nodes: one leaf, no spine; another rail: over a spine.
  EXPECT_EQ(t.route(0, 6).switches, 1);
  EXPECT_EQ(t.route(0, 5).switches, 3);
  // 8-port leaves hold 4 NICs: 3 nodes of 4 put 6 NICs on a rail, 2 leaves each.
  NetConfig three = test::cluster_like(12, 4);
  three.fabric_rails = 2;
  const FabricTopology u(three);
  EXPECT_EQ(u.leaves(), 4);
  EXPECT_EQ(u.leaf_of(8), 1);   // node 2, local 0: rail 0's fifth NIC
  EXPECT_EQ(u.leaf_of(11), 3);  // node 2, local 3: rail 1's sixth NIC
}

TEST(Fabric, IncastOnALeafSharesTheReceiverNic) {
  Simulator sim;
  // Three senders on rail 0 of nodes 1-3 to GPU 0 (rail 0 of node 0): all on one leaf, the
  // receiving NIC port is the bottleneck, a third of 50 GB/s of wire bytes each.
  FlowNetwork net(test::cluster_like(8, 2), sim);
  for (const int src : {2, 4, 6}) net.transfer(src, 0, 1 << 20, 0, [] {});
  const std::vector<double> r = net.rates();
  ASSERT_EQ(r.size(), 3u);
  for (const double x : r) EXPECT_NEAR(x, 50e9 / 3 * 1048576 / 1055232, 1e-3);
  sim.run();
}

TEST(Fabric, OversubscribedUplinksShareTheSpineLinks) {
  Simulator sim;
  // 3:1 on 8 ports: 6 NICs and 2 spine links per leaf. Rail 0 of nodes 0-2 to rail 1 of nodes
  // 0-2 crosses from leaf 0 to leaf 1: 3 flows on 2 uplinks of 50 GB/s.
  const NetConfig c = test::cluster_like(6, 2, 3);
  const FabricTopology t(c);
  ASSERT_EQ(t.spines(), 2);
  FlowNetwork net(c, sim);
  int up[2] = {0, 0};
  for (const int src : {0, 2, 4}) {
    const int dst = (src + 3) % 6;  // another node's rail 1
    net.transfer(src, dst, 1 << 20, 0, [] {});
    ++up[t.spine_for(src, dst)];
  }
  // Flows hashed onto the same uplink split it; a flow alone on one gets its NIC's rate.
  const std::vector<double> r = net.rates();
  ASSERT_EQ(r.size(), 3u);
  const int srcs[3] = {0, 2, 4};
  for (int i = 0; i < 3; ++i) {
    const int n = up[t.spine_for(srcs[i], (srcs[i] + 3) % 6)];
    EXPECT_NEAR(r[static_cast<size_t>(i)], 50e9 / n * 1048576 / 1055232, 1e-3) << "flow " << i;
  }
  sim.run();
}

TEST(Fabric, NcclPxnRelayIsTheSenderNodesGpuOnTheReceiversRail) {
  const NetConfig c = test::cluster_like(8, 4);  // nodes {0-3} and {4-7}
  NcclConfig pxn;
  pxn.pxn = true;
  EXPECT_EQ(nccl_pxn_relay(c, pxn, 1, 6), 2);  // rail 2 of node 0
  EXPECT_EQ(nccl_pxn_relay(c, pxn, 6, 1), 5);  // rail 1 of node 1
  EXPECT_EQ(nccl_pxn_relay(c, pxn, 1, 5), 1);  // same rail: its own NIC
  EXPECT_EQ(nccl_pxn_relay(c, pxn, 1, 2), 1);  // same node: NVLink only
  EXPECT_EQ(nccl_pxn_relay(c, NcclConfig{}, 1, 6), 1);
  EXPECT_EQ(nccl_pxn_relay(test::cluster_like(4, 4), pxn, 1, 2), 1);  // one node, no fabric
}

// One 1 MiB step from GPU 0 (rail 0) to GPU 3 (node 1, rail 1) on one channel (a 4 MiB net
// chunk: a send under one step moves quarter steps), through proxies that cost nothing.
Time pxn_pair_time(bool pxn, uint64_t* rdma_messages) {
  Simulator sim;
  FlowNetwork net(test::cluster_like(4, 2), sim);
  NcclConfig cfg;
  cfg.net_chunk_bytes = 4 << 20;
  cfg.channels_per_peer = 1;
  cfg.pxn = pxn;
  AllToAll a2a(net, sim, cfg);
  a2a.start_pair(0, 3, 1 << 20, 0, [] {});
  sim.run();
  *rdma_messages = net.stats()["rdma_messages"];
  return a2a.finish_time();
}

TEST(Fabric, NcclPxnForwardsTheChunkOverNvlinkThenStaysOnTheRailsLeaf) {
  uint64_t messages = 0;
  // Both ways the receiver's clear-to-send reaches the sender's proxy 1150 ns after the start
  // (NIC to NIC on one leaf, 850 ns, then PCIe), and GPU 3 reads the tail 300 ns after the step
  // has landed (tests/net/nccl_proxy_test.cpp has the proxies' steps).
  // Without PXN: GPU 0's FIFO is its own memory, its tail is seen at 300 ns; the write goes out
  // of GPU 0's own NIC at 1150 ns, across the spine (Fabric.CrossRail... above).
  EXPECT_NEAR(static_cast<double>(pxn_pair_time(false, &messages).ps()),
              1150000 + kMiBAtNicPs + kLastPacketPs + 1200000 + 200000 + 450000 + 300000, 1.0);
  EXPECT_EQ(messages, 1u);
  // With PXN: the step crosses NVLink 0 -> 1 (Fabric.InsideANode...) into GPU 1's FIFO, its tail
  // is seen 300 ns later, then GPU 1's NIC sends it to GPU 3 on rail 1's leaf.
  EXPECT_NEAR(static_cast<double>(pxn_pair_time(true, &messages).ps()),
              5898240 + 2880 + 600000 + 300000 + kMiBAtNicPs + kLastPacketPs + 1200000 + 100000 + 150000 + 300000,
              1.0);
  EXPECT_EQ(messages, 1u);
}

TEST(Fabric, RefusesWhatItCannotBuild) {
  const auto where = [](NetConfig c) {
    try {
      c.validate();
    } catch (const UserError& e) {
      return e.where();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(where(test::cluster_like(8, 2)), "accepted");
  NetConfig packet = test::cluster_like(8, 2);
  packet.fidelity = NetFidelity::Packet;
  EXPECT_EQ(where(packet), "accepted");  // the packet fidelity models the fabric (ScaleOutPackets)
  NetConfig wide = test::cluster_like(66, 2);
  wide.fabric_switch_ports = 64;  // room for 33 nodes of 2 on the leaves
  wide.fidelity = NetFidelity::Packet;
  EXPECT_EQ(where(wide), "net.fidelity");  // more GPUs than the NVLink packet model's masks
  packet.gpus = 2;  // one node: no fabric
  EXPECT_EQ(where(packet), "accepted");
  EXPECT_EQ(where(test::cluster_like(7, 2)), "run.gpus");  // not whole nodes
  // 8-port leaves hold 4 NICs: 2 rails x 9 leaves = 18 leaves, but a spine has 8 ports.
  EXPECT_EQ(where(test::cluster_like(2 * 33, 2)), "net.fabric_switch_ports");
  // With a plane per rail a spine serves only its rail's 9 leaves: still more than 8 ports; 8
  // leaves per rail (32 nodes) fit, where shared spines would need 16 ports.
  NetConfig planes = test::cluster_like(2 * 33, 2);
  planes.fabric_planes = FabricPlanes::PerRail;
  EXPECT_EQ(where(planes), "net.fabric_switch_ports");
  planes = test::cluster_like(2 * 32, 2);
  EXPECT_EQ(where(planes), "net.fabric_switch_ports");
  planes.fabric_planes = FabricPlanes::PerRail;
  EXPECT_EQ(where(planes), "accepted");
  NetConfig big = test::cluster_like(80, 40);  // 40 GPUs x 2 links per plane > 64 NVSwitch ports
  EXPECT_EQ(where(big), "net.gpus_per_node");
  EXPECT_EQ(where(test::cluster_like(8, 2, 2)), "net.fabric_oversubscription");  // 8 ports not in 3 parts
  NetConfig rails = test::cluster_like(12, 4);
  rails.fabric_rails = 3;  // 3 rails for 4 GPUs a node
  EXPECT_EQ(where(rails), "net.fabric_rails");
}

}  // namespace
}  // namespace moehub
