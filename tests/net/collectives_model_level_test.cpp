// Collectives: NCCL peer order, all-to-all efficiency in both fidelities and their agreement,
// thread-block puts.
// Model-level tests (numbers: timing, counts, statistics) split from collectives_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include "net/collectives.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "net/packet_network.h"

namespace moehub {
namespace {

NetConfig h800_with_acks() {
  NetConfig c = test::h800_like(8);
  c.write_ack = true;
  c.switch_buffer_bytes = 32 * 1024;
  c.ingress_buffer_bytes = 32 * 1024;
  c.response_buffer_bytes = 32 * 1024;
  c.switch_latency = Time::zero();
  return c;
}

// Achieved payload rate per sender (GB/s) of a uniform 8-GPU all-to-all.
double alltoall_gbps(NetFidelity fidelity, uint64_t bytes_per_gpu) {
  Simulator sim;
  NetConfig c = h800_with_acks();
  c.fidelity = fidelity;
  auto net = make_network(c, sim);
  AllToAll a2a(*net, sim, NcclConfig{});
  bool done = false;
  a2a.start(AllToAll::uniform(8, bytes_per_gpu), 0, [&] { done = true; });
  sim.run();
  EXPECT_TRUE(done);
  EXPECT_TRUE(a2a.finished());
  return static_cast<double>(bytes_per_gpu) / a2a.finish_time().seconds() / 1e9;
}

// Every GPU's links carry its data (144 B per 128 B) and the acks of what it receives (16 B
// per 128 B): 200 GB/s x 128/160 = 160 GB/s of payload at best.
constexpr double kCeilingGBps = 200.0 * 128 / 160;

TEST(Collectives, PacketAllToAllApproachesBandwidthTimesHeaderEfficiency) {
  const double small = alltoall_gbps(NetFidelity::Packet, 512 * 1024);
  const double large = alltoall_gbps(NetFidelity::Packet, 8 << 20);
  EXPECT_LT(small, kCeilingGBps);
  EXPECT_LT(large, kCeilingGBps);
  // 0.5 MB takes 3.3 us at the ceiling plus ~1.8 us of latency: the first packet, the last
  // write's ack (the fence) and the tail store, 0.6 us each (every pair fits one step).
  EXPECT_GT(small, 0.60 * kCeilingGBps);
  EXPECT_GT(large, 0.97 * kCeilingGBps);
  EXPECT_GT(large, small);
}

TEST(Collectives, PacketAndFlowAgreeWithinFivePercentOnLargeUniformAllToAll) {
  for (uint64_t bytes : {2ULL << 20, 8ULL << 20}) {
    const double packet = alltoall_gbps(NetFidelity::Packet, bytes);
    const double flow = alltoall_gbps(NetFidelity::Flow, bytes);
    EXPECT_NEAR(packet / flow, 1.0, 0.05) << bytes;
  }
}

// A Simple pair 0 -> 1 on one connection of 1 KiB steps in `steps` slots, packet model.
// Unloaded one-way times (h800_like: 50 GB/s per plane, 250 + 100 + 250 ns of latency):
// a 128 B write (9 flits) 2880 ps per link, 605760 in all; an ack (1 flit) 320 per link,
// 600640 in all; a tail or head store (8 B: 2 flits) 640 per link, 601280 in all.
struct SimplePair {
  Simulator sim;
  PacketNetwork net;
  AllToAll a2a;
  SimplePair(bool acks, int steps) : net(net_config(acks), sim), a2a(net, sim, nccl(steps)) {}
  int64_t run(uint64_t bytes) {
    a2a.start_pair(0, 1, bytes, 0, [] {});
    sim.run();
    return a2a.finish_time().ps();
  }
  uint64_t flags() const { return net.stats()["packets_delivered_by_kind"]["flag"]; }
  static NetConfig net_config(bool acks) {
    NetConfig c = test::h800_like(2);
    c.write_ack = acks;
    return c;
  }
  static NcclConfig nccl(int steps) {
    NcclConfig cfg;
    cfg.chunk_bytes = 1024;
    cfg.steps = steps;
    cfg.channels_per_peer = 1;
    cfg.ll_threshold_bytes = 0;  // Simple: the slots and their stores are its protocol
    return cfg;
  }
};

// Finish time of one 16 KiB pair (0 -> 1) on the packet model with the given LL threshold.
int64_t sixteen_kib_pair_ps(uint64_t ll_threshold) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  NcclConfig cfg;
  cfg.ll_threshold_bytes = ll_threshold;
  AllToAll a2a(net, sim, cfg);
  PerPair<uint64_t> m(2, 0);
  m(0, 1) = 16 * 1024;
  a2a.start(m, 0, [] {});
  sim.run();
  return a2a.finish_time().ps();
}

}  // namespace
}  // namespace moehub
