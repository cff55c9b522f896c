// Collectives: NCCL peer order, all-to-all efficiency in both fidelities and their agreement,
// thread-block puts.
// Model-level tests (numbers: timing, counts, statistics) split from collectives_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include "net/collectives.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "net/packet_network.h"
#include "net/alltoall_test_util.h"

namespace moehub {
namespace {

using test::alltoall_gbps;
using test::h800_with_acks;
using test::kCeilingGBps;


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
