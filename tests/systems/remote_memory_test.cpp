// RemoteMemory's reads across nodes: each request and response asks its own path's send window
// (the NIC queue pair towards a GPU of another node, net.nic_send_queue_depth messages), not the
// NVLink window (STATUS problem 5, session 25).

#include <gtest/gtest.h>

#include <vector>

#include "platform/remote_memory.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

// Two nodes of two GPUs at flow fidelity, one message per NIC queue pair.
SystemRun reads_on_two_nodes() {
  return SystemRun("ideal", {"run.gpus=4", "net.gpus_per_node=2", "net.fidelity=flow", "net.nic_send_queue_depth=1"},
                   false);
}

TEST(RemoteMemory, ReadsTowardsAnotherNodeWaitForTheirNicPair) {
  SystemRun r = reads_on_two_nodes();
  RemoteMemory memory(*r.cluster);
  std::vector<int64_t> done(3, -1);
  for (int i = 0; i < 3; ++i) memory.read(0, 2, 128, [&r, &done, i] { done[i] = r.sim.now().ps(); });
  // The first request holds the pair 0 -> 2's one slot; the others wait for it.
  EXPECT_FALSE(r.cluster->network().can_send_to(0, 2, 0, PacketKind::ReadRequest));
  EXPECT_TRUE(r.cluster->network().can_send_to(0, 3, 0, PacketKind::ReadRequest));
  EXPECT_TRUE(r.cluster->network().can_send_to(0, 1, 0, PacketKind::ReadRequest));
  r.sim.run();
  // A header-only request takes its header's trip to GPU 2 on rail 0's leaf: 26 B at 50 GB/s
  // (520 ps), PCIe and NIC 300 ns each at both ends, two 50 ns cables and one 150 ns switch:
  // 1450520 ps, and only then frees the pair's slot for the next request. GPU 2 reads the
  // 128 B (44 ps at 3350 GB/s x 0.87) and its response crosses back: the payload at the NIC's
  // rate, 154 wire bytes in 3080 ps, then the last packet's trip, 3080 + 1450000 ps; GPU 0
  // writes the 128 B (44 ps). The responses share GPU 2's pair 2 -> 0, one at a time, so the
  // reads complete one response trip apart (with the NVLink window asked instead, all three
  // responses left at once and the reads completed together).
  const int64_t response = 3080 + 3080 + 1450000;
  EXPECT_EQ(done[0], 1450520 + 44 + response + 44);
  EXPECT_EQ(done[1] - done[0], response);
  EXPECT_EQ(done[2] - done[1], response);
  EXPECT_TRUE(r.cluster->network().conservation_violations().empty());
}

TEST(RemoteMemory, AClosedNicPairHoldsBackOnlyItsOwnReads) {
  SystemRun r = reads_on_two_nodes();
  RemoteMemory memory(*r.cluster);
  int64_t first = -1, queued = -1, other_pair = -1, nvlink = -1;
  memory.read(0, 2, 128, [&] { first = r.sim.now().ps(); });
  memory.read(0, 2, 128, [&] { queued = r.sim.now().ps(); });  // its response waits for the first's
  memory.read(0, 3, 128, [&] { other_pair = r.sim.now().ps(); });
  memory.read(0, 1, 128, [&] { nvlink = r.sim.now().ps(); });
  // Issued behind a request that waits for the pair 0 -> 2, the one to GPU 3 went out at once.
  EXPECT_FALSE(r.cluster->network().can_send_to(0, 3, 0, PacketKind::ReadRequest));
  r.sim.run();
  ASSERT_GT(first, 0);
  EXPECT_GT(queued, first);
  EXPECT_LT(other_pair, queued);  // its response (pair 3 -> 0) does not wait for 2 -> 0's
  EXPECT_LT(nvlink, first);  // one NVLink hop against PCIe, NIC and switch each way
  EXPECT_TRUE(r.cluster->network().conservation_violations().empty());
}

}  // namespace
}  // namespace moehub
