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

}  // namespace
}  // namespace moehub
