// NCCL's ring collectives across nodes (issue 23 item 3, session 29): a ring hop between nodes
// runs the net transport through the GPUs' proxy threads (net/nccl_net_hop.h). Two nodes of one
// GPU each (net.gpus_per_node = 1, the verify shapes on the DGX-H800 base), so both hops of the
// ring 0 -> 1 -> 0 cross nodes; timed by hand at flow and at packet fidelity.
//
// Hand sums with the base's values (read back below): a proxy post P = 100 ns, a poll Q = 50 ns,
// PCIe 300 ns one way, an ack or clear-to-send NIC to NIC ack = 2 x 300 (NICs) + 2 x cable +
// leaf switch; T(b): the network's own lone transfer of b bytes from GPU 0 to GPU 1.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/nccl_ring.h"
#include "platform/nccl_ring_all_gather.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

struct NetRingTwoNodes {
  SystemRun run;
  explicit NetRingTwoNodes(const std::string& fidelity)
      : run("ideal", {"run.gpus=2", "net.gpus_per_node=1", "net.fidelity=" + fidelity}, false) {}
  Cluster& cluster() { return *run.cluster; }
  const NetConfig& net() { return cluster().network().config(); }
  double ns(Time t) const { return t.us() * 1e3; }
  // The clear-to-send's trip after its receive is posted, as in net/collectives.cpp.
  Time ack() { return net().nic_latency * 2 + net().fabric_cable_latency * 2 + net().fabric_switch_latency; }
};

Time net_ring_lone_transfer(const std::string& fidelity, uint64_t bytes) {
  NetRingTwoNodes rig(fidelity);
  Time at;
  rig.cluster().network().transfer(0, 1, bytes, 0, [&] { at = rig.cluster().sim().now(); });
  rig.cluster().sim().run();
  return at;
}

// Each rank's proxy posts its one receive (two posts: ibv_post_recv and the clear-to-send) at
// 0-2P; the clear-to-send reaches the sender's host ack + PCIe later, after the sender's tail
// (PCIe). The sender's thread, free since 2P, posts the write (P); it lands T later, the
// receiver's thread polls it (Q) and the GPU reads the tail a PCIe crossing later.
TEST(RingAllGatherAcrossNodes, EachHopPassesBothProxyThreads) {
  std::vector<double> at;
  for (const std::string fidelity : {"flow", "packet"}) {
    NetRingTwoNodes rig(fidelity);
    const NcclConfig& n = rig.cluster().nccl();
    ASSERT_EQ(n.proxy_post_cost, Time::from_ns(100));
    ASSERT_EQ(n.proxy_poll_cost, Time::from_ns(50));
    ASSERT_EQ(rig.net().pcie_latency, Time::from_ns(300));
    std::vector<Time> done(2);
    RingAllGather ag(rig.cluster(), 2048, [&](int g) { done[static_cast<size_t>(g)] = rig.cluster().sim().now(); });
    ag.join(0);
    ag.join(1);
    rig.cluster().sim().run();
    const Time want = n.proxy_post_cost * 3 + rig.ack() + rig.net().pcie_latency * 2 + net_ring_lone_transfer(fidelity, 2048) +
                      n.proxy_poll_cost;
    EXPECT_EQ(done[0], want) << fidelity;
    EXPECT_EQ(done[1], want) << fidelity;
    // Each thread: one receive (two posts) and one send posted, one arrival and one send polled.
    EXPECT_EQ(rig.cluster().nccl_proxies().actions(0), 4u);
    EXPECT_EQ(rig.cluster().nccl_proxies().busy(1), Time::from_ns(200 + 100 + 50 + 50));
    at.push_back(rig.ns(done[0]));
  }
  // By hand: 3 x 100 + 850 (ack: 2 x 300 + 2 x 50 + 150) + 2 x 300 + 50 = 1800 ns plus the lone
  // 2 KiB transfer, one 2074-byte packet on the wire (41.48 ns at 50 GB/s) and 1450 ns of
  // latencies (PCIe 300 + NIC 300, cable 50 + leaf 150, cable 50 + NIC 300, PCIe 300). The packet
  // model cuts through (41.48 + 1450); the flow model ends a transfer when its payload has left
  // the NIC plus its last packet's serialisation (docs/network.md, Flow fidelity), 41.48 more.
  EXPECT_NEAR(at[0], 1800 + 41.48 + 41.48 + 1450, 0.01);  // flow
  EXPECT_NEAR(at[1], 1800 + 41.48 + 1450, 0.01);          // packet
}

// HBM pass of f slices of 512 KiB on the base (3.35 TB/s x 0.87), as megatron_te_test.cpp.
double net_ring_pass_ns(double slices) { return slices * 524288.0 / 2914.5; }

// A broadcast of one 512 KiB slice from GPU 0 to GPU 1 (NcclRing, broadcast.h:44-54): rank 0
// copies it (a pass of 2 slices of HBM) into its own FIFO and stores the tail: its part ends
// there. The write leaves once the receiver's clear-to-send is back (2P + ack + PCIe, later than
// the tail's pass + PCIe) and its post (P); T(512 KiB) later it is polled (Q), its tail read
// (PCIe), and rank 1 makes its pass.
TEST(NcclRingAcrossNodes, ABroadcastSliceCrossesThroughTheProxies) {
  for (const std::string fidelity : {"flow", "packet"}) {
    NetRingTwoNodes rig(fidelity);
    const uint64_t slice = rig.cluster().nccl().chunk_bytes;
    ASSERT_EQ(slice, 512u * 1024);
    RingSpec spec;
    spec.rings = {{0, 1}};
    spec.block = PerGpu<uint64_t>(2, 0);
    spec.block[0] = slice;
    NcclRing ring(rig.cluster(), "ring", spec, NcclKernelShape{});
    std::vector<double> done(2);
    ring.set_hooks([&](int, int rank) { done[static_cast<size_t>(rank)] = rig.ns(rig.cluster().sim().now() - *ring.resident_at(0)); });
    for (int g = 0; g < 2; ++g) ring.launch(g, rig.cluster().stream(g));
    rig.cluster().sim().run();
    ASSERT_EQ(ring.resident_at(1), ring.resident_at(0));
    const NcclConfig& n = rig.cluster().nccl();
    const double hop = rig.ns(n.proxy_post_cost * 3 + rig.ack() + rig.net().pcie_latency * 2 + net_ring_lone_transfer(fidelity, slice) +
                              n.proxy_poll_cost);
    EXPECT_NEAR(done[0], net_ring_pass_ns(2), 1.0) << fidelity;
    EXPECT_NEAR(done[1], hop + net_ring_pass_ns(2), 1.0) << fidelity;
  }
}

}  // namespace
}  // namespace moehub
