// The scale-out fabric at packet fidelity (src/net/scaleout_packet.h): a transfer and a message
// between nodes timed by hand, acks, a shared leaf uplink against the flow fidelity, a refusing
// receiver, and the statistics. test::cluster_like gives every number: PCIe 64 GB/s, NICs and
// leaf-spine links 50 GB/s, PCIe and NIC latencies 300 ns, cables 50 ns, switches 150 ns, 4 KiB
// MTU with 26 B of headers, 1 G packets/s per NIC (1000 ps a packet).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "net/fabric_topology.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "net/packet_network.h"
#include "sim/error.h"

namespace moehub {
namespace {

NetConfig packet_cluster(int gpus, int per_node, int oversubscription = 1) {
  NetConfig c = test::cluster_like(gpus, per_node, oversubscription);
  c.fidelity = NetFidelity::Packet;
  return c;
}

struct FabricArrivals : PacketReceiver {
  Simulator& sim;
  std::vector<Time> at;
  std::vector<Packet> got;
  bool refuse = false;
  explicit FabricArrivals(Simulator& s) : sim(s) {}
  bool can_accept(const Packet&) override { return !refuse; }
  void deliver(Packet&& p) override {
    at.push_back(sim.now());
    got.push_back(std::move(p));
  }
};

struct Acks : PacketClient {
  Simulator& sim;
  std::vector<Time> at;
  explicit Acks(Simulator& s) : sim(s) {}
  void on_ack(const Packet&) override { at.push_back(sim.now()); }
};

// Latencies of a route on one leaf: PCIe 300 + NIC 300 at each end, 2 cables of 50, 1 switch
// of 150 ns; across a spine 2 more cables and switches.
constexpr int64_t kOneLeafPs = 1200000 + 100000 + 150000;
constexpr int64_t kSpinePs = kOneLeafPs + 100000 + 300000;
// One MTU packet on a NIC port: 4122 B at 50 GB/s.
constexpr int64_t kMtuPortPs = 82440;

TEST(ScaleOutPackets, OneMessageTakesItsPortTimeAndTheLatenciesAndItsAckComesBack) {
  Simulator sim;
  NetConfig c = packet_cluster(4, 2);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  FabricArrivals rx(sim);
  Acks acks(sim);
  net.set_receiver(2, &rx);
  ASSERT_TRUE(net.can_send_to(0, 2, 128));
  Packet p;
  p.src = 0;
  p.dst = 2;  // node 1, rail 0: one leaf
  p.payload_bytes = 128;
  p.client = &acks;
  p.cookie = 7;
  net.send(std::move(p));
  sim.run();
  // Cut-through: 154 B on the NIC ports (3080 ps) is the slowest serialisation (PCIe: 128 B at
  // 64 GB/s = 2000 ps), so the message arrives after it plus every latency.
  ASSERT_EQ(rx.at.size(), 1u);
  EXPECT_EQ(rx.at[0].ps(), kOneLeafPs + 3080);
  EXPECT_EQ(rx.got[0].cookie, 7u);
  // The ack (26 B, 520 ps a port) leaves GPU 2's NIC at delivery: 200 ns to the leaf's port to
  // NIC 0, 520 ps on it, 350 ns to NIC 0, 300 ns across PCIe to the sender.
  ASSERT_EQ(acks.at.size(), 1u);
  EXPECT_EQ(acks.at[0].ps(), rx.at[0].ps() + 200000 + 520 + 350000 + 300000);
  EXPECT_TRUE(net.conservation_violations().empty());
  const auto stats = net.stats();
  EXPECT_EQ(stats["rdma_messages"], 1u);
  EXPECT_EQ(stats["rdma_packets"], 1u);
  EXPECT_EQ(stats["rdma_acks_delivered"], 1u);
  EXPECT_EQ(stats["packets_injected"], 0u);  // nothing on NVLink
}

TEST(ScaleOutPackets, NicToNicTransferIsPortBoundAfterTheFirstPacketsHead) {
  Simulator sim;
  PacketNetwork net(packet_cluster(4, 2), sim);
  Time done;
  net.transfer(0, 2, 1 << 20, 0, [&] { done = sim.now(); });
  sim.run();
  // 256 MTU packets. The NIC's read pipeline (50 GB/s x 600 ns + one 4122 B packet = 34122 B,
  // 8 packets) keeps its port busy: packet k's head reaches the port 600 ns after it was fetched
  // (when packet k - 8 started), 59.52 ns before the port is free for it. So the port sends from
  // 600 ns (the first packet's PCIe and NIC latencies) for 256 x 82.44 ns, and the last
  // packet's tail arrives 850 ns later (200 to the leaf, 350 to the NIC, 300 across PCIe).
  EXPECT_EQ(done.ps(), 600000 + 256 * kMtuPortPs + 850000);
  // The flow fidelity (Fabric.NicToNicOnOneLeaf...) charges the last packet's port time once
  // more: 82.44 ns (0.37 %) later.
  Simulator fsim;
  FlowNetwork flow(test::cluster_like(4, 2), fsim);
  Time flow_done;
  flow.transfer(0, 2, 1 << 20, 0, [&] { flow_done = fsim.now(); });
  fsim.run();
  EXPECT_NEAR(static_cast<double>(flow_done.ps() - done.ps()), static_cast<double>(kMtuPortPs), 1.0);
  const auto stats = net.stats();
  EXPECT_EQ(stats["rdma_payload_bytes"], 1u << 20);
  EXPECT_EQ(stats["rdma_packets"], 256u);
  EXPECT_TRUE(net.conservation_violations().empty());
}

TEST(ScaleOutPackets, CrossRailTransferGoesOverTheSpine) {
  Simulator sim;
  PacketNetwork net(packet_cluster(4, 2), sim);
  Time done;
  net.transfer(0, 3, 1 << 20, 0, [&] { done = sim.now(); });  // rail 0 to rail 1
  sim.run();
  EXPECT_EQ(done.ps(), 600000 + 256 * kMtuPortPs + (kSpinePs - 600000));
  // The leaf-spine links carried the 256 packets' wire bytes.
  uint64_t spine_bytes = 0;
  const auto stats = net.stats();
  for (const auto& l : stats["links"]) {
    if (l["from"].get<std::string>().rfind("leaf", 0) == 0 && l["to"].get<std::string>().rfind("spine", 0) == 0) {
      spine_bytes += l["bytes"].get<uint64_t>();
    }
  }
  EXPECT_EQ(spine_bytes, 256u * 4122u);
}

// Two transfers from different NICs of leaf 0 (rail 0) to rail 1 of the other node, on leaves
// with one spine link (7:1 on 8 ports): they share leaf 0's uplink, 25 GB/s of wire bytes each.
TEST(ScaleOutPackets, TwoFlowsSharingALeafUplinkAgreeWithTheFlowFidelity) {
  const int pairs[2][2] = {{0, 3}, {2, 1}};
  const FabricTopology t(packet_cluster(4, 2, 7));
  ASSERT_EQ(t.spines(), 1);
  Simulator sim;
  PacketNetwork net(packet_cluster(4, 2, 7), sim);
  Simulator fsim;
  FlowNetwork flow(test::cluster_like(4, 2, 7), fsim);
  Time done[2];
  Time flow_done[2];
  for (int i = 0; i < 2; ++i) {
    net.transfer(pairs[i][0], pairs[i][1], 1 << 20, 0, [&, i] { done[i] = sim.now(); });
    flow.transfer(pairs[i][0], pairs[i][1], 1 << 20, 0, [&, i] { flow_done[i] = fsim.now(); });
  }
  sim.run();
  fsim.run();
  // Flow: both at 25 GB/s of wire: 2 x 21104.64 ns, then the tail (82.44 ns + 1850 ns).
  for (const Time d : flow_done) EXPECT_NEAR(static_cast<double>(d.ps()), 2.0 * 256 * kMtuPortPs + kMtuPortPs + kSpinePs, 1.0);
  // Packets: the uplink alternates between the two NICs' packets from 800 ns (the first heads
  // at the leaf) for 512 x 82.44 ns; the last packet (the second flow's) ends there and reaches
  // its GPU 1050 ns later (200 ns to the far leaf, 200 to its port, 350 to the NIC, 300 PCIe);
  // the first flow's last packet one port time before.
  const int64_t last = 800000 + 512 * kMtuPortPs + 1050000;
  EXPECT_EQ(std::max(done[0], done[1]).ps(), last);
  EXPECT_EQ(std::min(done[0], done[1]).ps(), last - kMtuPortPs);
  // Agreement: within 0.5 % (the flow's extra last-packet time and the packets' interleaving).
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(static_cast<double>(done[i].ps()) / static_cast<double>(flow_done[i].ps()), 1.0, 0.005) << i;
  }
  EXPECT_TRUE(net.conservation_violations().empty());
}

TEST(ScaleOutPackets, AFullQueuePairClosesItsPathOnlyAndReopensAtDelivery) {
  Simulator sim;
  NetConfig c = packet_cluster(4, 2);
  c.nic_send_queue_depth = 2;
  PacketNetwork net(c, sim);
  for (int i = 0; i < 2; ++i) {
    Packet p;
    p.src = 0;
    p.dst = 2;
    p.payload_bytes = 128;
    net.send(std::move(p));
  }
  EXPECT_FALSE(net.can_send_to(0, 2, 128));
  EXPECT_TRUE(net.can_send_to(0, 3, 128));  // another queue pair
  EXPECT_TRUE(net.can_send_to(0, 1, 128));  // NVLink
  struct Room : RoomListener {
    Simulator& sim;
    Time at;
    explicit Room(Simulator& s) : sim(s) {}
    void on_room(int) override { at = sim.now(); }
  } room(sim);
  net.request_room_to(0, 2, &room);
  sim.run();
  // The first message arrives at 1453080 ps (the message test above); the second, fetched with
  // it, leaves the port 3080 ps after it.
  EXPECT_EQ(room.at.ps(), kOneLeafPs + 3080);
  EXPECT_TRUE(net.can_send_to(0, 2, 128));
}

// A read response is made by the responder's NIC, not posted on its send queue: it takes no
// queue pair slot, so two GPUs that read each other cannot fill each other's windows with
// requests their receivers hold while their own responses wait for those windows.
TEST(ScaleOutPackets, AReadResponseDoesNotWaitForTheQueuePairWindow) {
  Simulator sim;
  NetConfig c = packet_cluster(4, 2);
  c.nic_send_queue_depth = 1;
  PacketNetwork net(c, sim);
  Packet request;
  request.src = 0;
  request.dst = 2;
  request.kind = PacketKind::ReadRequest;
  net.send(std::move(request));
  EXPECT_FALSE(net.can_send_to(0, 2, 0, PacketKind::ReadRequest));
  EXPECT_FALSE(net.can_send_to(0, 2, 128, PacketKind::Write));
  EXPECT_TRUE(net.can_send_to(0, 2, 128, PacketKind::ReadResponse));
  Packet response;
  response.src = 0;
  response.dst = 2;
  response.payload_bytes = 128;
  response.kind = PacketKind::ReadResponse;
  net.send(std::move(response));
  EXPECT_FALSE(net.can_send_to(0, 2, 128, PacketKind::Write));  // still the request's slot only
  sim.run();
  EXPECT_TRUE(net.can_send_to(0, 2, 128, PacketKind::Write));
  EXPECT_TRUE(net.conservation_violations().empty());
}

TEST(ScaleOutPackets, ARefusingReceiverHoldsRequestsUntilItResumes) {
  Simulator sim;
  PacketNetwork net(packet_cluster(4, 2), sim);
  FabricArrivals rx(sim);
  rx.refuse = true;
  net.set_receiver(2, &rx);
  for (uint64_t i = 0; i < 3; ++i) {
    Packet p;
    p.src = 0;
    p.dst = 2;
    p.payload_bytes = 64;
    p.cookie = i;
    net.send(std::move(p));
  }
  sim.run_until(Time::from_ns(5000));
  EXPECT_TRUE(rx.at.empty());
  EXPECT_FALSE(net.conservation_violations().empty());  // held at the NIC
  rx.refuse = false;
  const Time resumed = sim.now();  // the run went dry at the last arrival
  net.resume_ingress(2);
  sim.run();
  ASSERT_EQ(rx.got.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(rx.got[i].cookie, i);  // in order
  for (const Time t : rx.at) EXPECT_EQ(t, resumed);
  EXPECT_TRUE(net.conservation_violations().empty());
}

// A message's payload is capped by its path's packet: an NVLink packet inside a node, an RDMA
// MTU across nodes (a store across nodes is not cut into NVLink-sized RDMA messages).
TEST(ScaleOutPackets, AMessageAcrossNodesMayCarryAnMtu) {
  Simulator sim;
  const NetConfig c = packet_cluster(4, 2);
  PacketNetwork net(c, sim);
  EXPECT_EQ(net.message_limit_to(0, 1), c.max_payload_bytes);  // GPUs 0 and 1 share node 0
  EXPECT_EQ(net.message_limit_to(0, 2), c.rdma_mtu_bytes);
  EXPECT_EQ(net.message_limit_to(3, 0), c.rdma_mtu_bytes);
  EXPECT_GT(c.rdma_mtu_bytes, c.max_payload_bytes);
}

TEST(ScaleOutPackets, InsideANodePacketsStayOnNvlink) {
  Simulator sim;
  PacketNetwork net(packet_cluster(4, 2), sim);
  Time done;
  net.transfer(0, 1, 1 << 20, 0, [&] { done = sim.now(); });
  sim.run();
  const auto stats = net.stats();
  EXPECT_EQ(stats["rdma_messages"], 0u);
  EXPECT_EQ(stats["packets_delivered"], 8192u);  // 1 MiB in 128 B NVLink packets
  EXPECT_EQ(stats["nodes"], 2);
}

// Link-level credits (net.fabric_port_buffer). A buffer of one MTU packet (4122 B) on a 4-packet
// transfer from GPU 0 to GPU 2 (one leaf). Packet p starts on the leaf's port to NIC 2 at t_p;
// its tail leaves the NIC over PCIe at t_p + 82.44 + 350 ns (PCIe's 64 ns for 4 KiB is shorter
// than the tail's arrival), and the room in NIC 2's buffer is back at the leaf 50 ns (a cable)
// later: t_(p+1) = t_p + 482.44 ns. The leaf's own buffer is free again at t_p + 82.44 + 50 ns,
// so packet p+1 has reached the leaf (200 ns after it started on NIC 0's port) by then.
// t_0 = 800 ns (600 ns to NIC 0's port, 200 ns to the leaf); the last packet reaches GPU 2
// 732.44 ns after t_3 (its 82.44 ns on the port, 350 ns to the NIC, 300 ns across PCIe).
TEST(ScaleOutPackets, AOnePacketBufferLetsOnePacketPerCreditRoundTripIntoTheNic) {
  Simulator sim;
  NetConfig c = packet_cluster(4, 2);
  c.fabric_port_buffer_bytes = 4122;
  PacketNetwork net(c, sim);
  Time done;
  net.transfer(0, 2, 4 * 4096, 0, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done.ps(), 800000 + 3 * 482440 + 732440);
  const auto stats = net.stats();
  EXPECT_EQ(stats["rdma_packets"], 4u);
  EXPECT_GT(stats["fabric_credit_stalls"].get<uint64_t>(), 0u);
  EXPECT_TRUE(net.conservation_violations().empty());  // every credit came back
}

// 64 KiB (the cluster presets' value) holds more than a hop's credit round trip at 50 GB/s
// (about 5 packets at the leaf, 6 at the NIC), so an uncongested 1 MiB transfer keeps its port
// busy and arrives as with unbounded buffers (NicToNicTransferIsPortBoundAfterTheFirstPacketsHead).
TEST(ScaleOutPackets, BuffersAboveTheCreditRoundTripKeepTheLineRate) {
  Simulator sim;
  NetConfig c = packet_cluster(4, 2);
  c.fabric_port_buffer_bytes = 64 * 1024;
  PacketNetwork net(c, sim);
  Time done;
  net.transfer(0, 2, 1 << 20, 0, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done.ps(), 600000 + 256 * kMtuPortPs + 850000);
  EXPECT_EQ(net.stats()["fabric_credit_stalls"], 0u);
}

// Congestion spreading: GPUs 0 and 2 both send to GPU 4 (an incast on its leaf port), and GPU 0
// also sends to GPU 6. Unbounded, GPU 0's packets for GPU 4 wait at the leaf and those for GPU 6
// pass them; with two-packet buffers they fill the leaf's input buffer from NIC 0, NIC 0's port
// stops, and the transfer to GPU 6, whose path is free, waits behind them (head-of-line
// blocking in a lossless fabric).
TEST(ScaleOutPackets, AnIncastOnALeafPortHoldsBackAVictimFlowThroughCredits) {
  auto run = [](uint64_t buffer, Time& victim, Time& incast, uint64_t& stalls) {
    Simulator sim;
    NetConfig c = packet_cluster(8, 2);
    c.fabric_port_buffer_bytes = buffer;
    PacketNetwork net(c, sim);
    Time a, b;
    net.transfer(0, 4, 1 << 20, 0, [&] { a = sim.now(); });
    net.transfer(2, 4, 1 << 20, 0, [&] { b = sim.now(); });
    net.transfer(0, 6, 1 << 20, 0, [&] { victim = sim.now(); });
    sim.run();
    incast = max(a, b);
    const auto stats = net.stats();
    stalls = stats.contains("fabric_credit_stalls") ? stats["fabric_credit_stalls"].get<uint64_t>() : 0;
    EXPECT_TRUE(net.conservation_violations().empty());
  };
  Time victim_free, incast_free, victim_credits, incast_credits;
  uint64_t stalls_free = 0, stalls = 0;
  run(0, victim_free, incast_free, stalls_free);
  run(2 * 4122, victim_credits, incast_credits, stalls);
  EXPECT_EQ(stalls_free, 0u);
  EXPECT_GT(stalls, 0u);
  // Unbounded: NIC 0's port alternates its two queue pairs, so the victim's 256 packets are
  // out after about 512 port times; with credits it is held back by the incast's pace.
  EXPECT_GT(victim_credits.ps(), victim_free.ps() + 100 * kMtuPortPs);
  // The incast is bound by GPU 4's port either way (512 packets), within a few round trips.
  EXPECT_GE(incast_credits.ps(), incast_free.ps());
}

TEST(ScaleOutPackets, ABufferBelowOnePacketIsRefused) {
  NetConfig c = packet_cluster(4, 2);
  c.fabric_port_buffer_bytes = 4121;
  EXPECT_THROW(c.validate(), UserError);
}

}  // namespace
}  // namespace moehub
