// NCCL's net transport across nodes: the proxy threads and a connection's steps in order, timed
// by hand on test::cluster_like (flow fidelity, merged pair flows so a pair's RDMA writes leave
// the NIC one after another, as one queue pair's do).
//
// Hand sums used below (cluster_like: PCIe and NIC 300 ns one way each, 50 ns cables, 150 ns
// switches, 50 GB/s NICs, 4 KiB MTU with 26 B headers):
//  - a 32 KiB step on one leaf: 8 packets, 32976 wire bytes, 659.52 ns at the NIC; its tail
//    (last packet 82.44 ns, 2 x PCIe, 2 x NIC, 2 cables, 1 switch) 1532.44 ns;
//  - an ack or clear-to-send NIC to NIC: 2 x 300 + 2 x 50 + 150 = 850 ns, then 300 ns of PCIe
//    into host memory: 1150 ns;
//  - proxy costs: a post 100 ns (an irecv is two posts: ibv_post_recv and the clear-to-send),
//    a poll 50 ns.

#include <gtest/gtest.h>

#include "net/collectives.h"
#include "net/flow_network.h"
#include "net/nccl_net_hop.h"
#include "net/nccl_proxy.h"
#include "net/net_test_util.h"

namespace moehub {
namespace {

TEST(NcclProxy, ActionsOfOneThreadRunOneAfterAnother) {
  Simulator sim;
  NcclProxies proxies(sim, 2);
  std::vector<int64_t> ends;
  proxies.run(0, Time::from_ns(100), Time::zero(), [&] { ends.push_back(sim.now().ps()); });
  proxies.run(0, Time::from_ns(50), Time::from_ns(300), [&] { ends.push_back(sim.now().ps()); });
  proxies.run(1, Time::from_ns(70), Time::zero(), [&] { ends.push_back(sim.now().ps()); });  // another GPU's thread
  sim.run();
  // GPU 1's action ends first (70 ns); GPU 0's second starts at 100 and is seen 300 ns after 150.
  EXPECT_EQ(ends, (std::vector<int64_t>{70000, 100000, 450000}));
  EXPECT_EQ(proxies.actions(0), 2u);
  EXPECT_EQ(proxies.busy(0), Time::from_ns(150));
}

TEST(NcclProxy, StepSizeFollowsNcclsNetChunkAndItsTuning) {
  const NetConfig two_nodes = test::cluster_like(4, 2);
  NcclConfig cfg;  // 512 KiB in one node, 128 KiB across
  EXPECT_EQ(nccl_step_bytes(cfg, test::h800_like(4), 0, 1, 10 << 20), 512u * 1024);  // one node
  EXPECT_EQ(nccl_step_bytes(cfg, two_nodes, 0, 1, 10 << 20), 128u * 1024);  // inside a node of a multi-node run
  EXPECT_EQ(nccl_step_bytes(cfg, two_nodes, 0, 2, 100 * 1024), 32u * 1024);      // < 1 step: a quarter
  EXPECT_EQ(nccl_step_bytes(cfg, two_nodes, 0, 2, 1024 * 1024 - 1), 64u * 1024);  // < 8 steps: a half
  EXPECT_EQ(nccl_step_bytes(cfg, two_nodes, 0, 2, 1024 * 1024), 128u * 1024);
  // minPartSize across nodes is half the net chunk: 64 KiB, as a 512 KiB chunk / 8 in one node.
  EXPECT_EQ(nccl_pair_channels(cfg, 64 * 1024 + 1, true), 2);
}

// GPU 0 (node 0, rail 0) sends 96 KiB to GPU 2 (node 1, rail 0) on one channel: 96 KiB is
// under 8 net chunks of 64 KiB, so 32 KiB steps, three of them; same rail, so GPU 0's own NIC
// (no PXN hop) and its FIFO in its own memory.
struct TwoNodeSend {
  Simulator sim;
  FlowNetwork net;
  NcclProxies proxies;
  AllToAll a2a;
  explicit TwoNodeSend(int slots) : net(fabric(), sim), proxies(sim, 4), a2a(net, sim, nccl(slots), &proxies) {}
  static NetConfig fabric() {
    NetConfig c = test::cluster_like(4, 2);
    c.flow_merge_pairs = true;
    return c;
  }
  static NcclConfig nccl(int slots) {
    NcclConfig cfg;
    cfg.net_chunk_bytes = 64 * 1024;
    cfg.steps = slots;
    cfg.channels_per_peer = 1;
    cfg.proxy_post_cost = Time::from_ns(100);
    cfg.proxy_poll_cost = Time::from_ns(50);
    return cfg;
  }
  int64_t run() {
    a2a.start_pair(0, 2, 96 * 1024, 0, [] {});
    sim.run();
    return a2a.finish_time().ps();
  }
};

TEST(NcclProxy, ThreeStepsCrossThroughBothProxiesInOrder) {
  TwoNodeSend t(8);
  // The receiver's proxy posts three receives at 0-200, 200-400, 400-600 ns; their
  // clear-to-sends reach GPU 0's host at 1350, 1550 and 1750. GPU 0 copies its three steps at
  // once (local FIFO) and its tails are seen at 300. So the sends are posted at 1350-1450,
  // 1550-1650, 1750-1850 and the NIC moves them in order: payloads leave at 1450 + k x 659.52,
  // k = 1..3; the last lands 1532.44 later (4961.00), is polled (50) and its tail read by
  // GPU 2 across PCIe (300): 5311.00 ns.
  EXPECT_NEAR(static_cast<double>(t.run()), 1450000 + 3 * 659520 + 1532440 + 50000 + 300000, 2.0);
  // GPU 0's thread: three sends, three send completions; GPU 2's: three receives (two posts
  // each), three receive completions.
  EXPECT_EQ(t.proxies.actions(0), 6u);
  EXPECT_EQ(t.proxies.busy(0), Time::from_ns(3 * 100 + 3 * 50));
  EXPECT_EQ(t.proxies.actions(2), 6u);
  EXPECT_EQ(t.proxies.busy(2), Time::from_ns(3 * 200 + 3 * 50));
  EXPECT_EQ(t.net.stats()["rdma_messages"], 3u);
}

TEST(NcclProxy, OneSlotWaitsForEveryHandOver) {
  TwoNodeSend t(1);
  // Step 0: receive posted 0-200, clear-to-send 1350, send 1350-1450, lands 3641.96, polled
  // 3691.96, read by GPU 2 at 3991.96, whose head reaches host memory at 4291.96: the next
  // receive is posted 4291.96-4491.96 and its clear-to-send arrives 5641.96. Meanwhile the
  // send's ack reaches GPU 0's host at 4791.96, is polled by 4841.96 and the slot seen free
  // at 5141.96, so step 1's tail is seen at 5441.96: the clear-to-send is the later, and each
  // step repeats the 4291.96 ns from clear-to-send to clear-to-send. Step 2 is sent at
  // 1350 + 2 x 4291.96 + 100 and read 2191.96 + 50 + 300 later.
  EXPECT_NEAR(static_cast<double>(t.run()), 1350000 + 2 * 4291960 + 100000 + 2191960 + 50000 + 300000, 4.0);
  EXPECT_EQ(t.net.stats()["rdma_messages"], 3u);
}

TEST(NcclProxy, ReceiverFlushAddsAnRdmaReadBeforeTheTail) {
  // With a GDR flush (Ampere and earlier) each step waits for a post, a PCIe round trip and a
  // poll on the receiver's thread before its tail: 100 + 600 + 50 ns more for the last step.
  TwoNodeSend plain(8);
  TwoNodeSend flushed(8);
  NcclConfig cfg = TwoNodeSend::nccl(8);
  cfg.gdr_flush = true;
  AllToAll a2a(flushed.net, flushed.sim, cfg, &flushed.proxies);
  a2a.start_pair(0, 2, 96 * 1024, 0, [] {});
  flushed.sim.run();
  // The third step lands at 4961.00 when the receiver's thread is idle: poll 50, flush post
  // 100, read 600, poll 50, tail 300.
  EXPECT_NEAR(static_cast<double>(a2a.finish_time().ps()), static_cast<double>(plain.run() + 100000 + 600000 + 50000), 2.0);
}

// A ring hop (NcclNetHop) runs the same net transport: three 32 KiB slices from GPU 0 to GPU 2,
// all ready at once, each consumed as soon as read, take to the picosecond what AllToAll's
// connection of three 32 KiB steps takes (the hand sums above: 5311.00 ns with 8 slots,
// 1350 + 2 x 4291.96 + 100 + 2191.96 + 50 + 300 ns with one).
int64_t hop_of_three_slices(int slots, std::vector<int64_t>* posted = nullptr) {
  Simulator sim;
  FlowNetwork net(TwoNodeSend::fabric(), sim);
  NcclProxies proxies(sim, 4);
  NcclNetHop hop(net, sim, proxies, TwoNodeSend::nccl(slots), 0, 2, 3, slots);
  int64_t last = 0;
  hop.set_hooks([&](uint64_t) { if (posted) posted->push_back(sim.now().ps()); }, nullptr,
                [&](uint64_t) {
                  hop.consumed();
                  last = sim.now().ps();
                });
  hop.open_receiver();
  for (int k = 0; k < 3; ++k) hop.push(32 * 1024);
  sim.run();
  EXPECT_EQ(proxies.actions(0), 6u);  // three sends, three send completions
  EXPECT_EQ(proxies.actions(2), 6u);  // three receives, three receive completions
  return last;
}

TEST(NcclNetHop, ARingHopCrossesLikeAnAllToAllConnection) {
  std::vector<int64_t> posted;
  EXPECT_EQ(hop_of_three_slices(8, &posted), TwoNodeSend(8).run());
  EXPECT_NEAR(static_cast<double>(hop_of_three_slices(8)), 1450000 + 3 * 659520 + 1532440 + 50000 + 300000, 2.0);
  // The FIFO is the sender's own memory: every tail is stored at once (the kernel's part ends).
  EXPECT_EQ(posted, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(hop_of_three_slices(1), TwoNodeSend(1).run());
}

TEST(NcclNetHop, RefusesGpusOfOneNode) {
  Simulator sim;
  FlowNetwork net(TwoNodeSend::fabric(), sim);
  NcclProxies proxies(sim, 4);
  EXPECT_THROW(NcclNetHop(net, sim, proxies, TwoNodeSend::nccl(8), 0, 1, 1, 8), std::logic_error);
}

}  // namespace
}  // namespace moehub
