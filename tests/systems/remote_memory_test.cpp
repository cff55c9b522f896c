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
  // Each request leaves when the one before it is delivered, so the reads complete one request
  // latency apart (128 B responses: no two overlap on a link). With the NVLink window asked
  // instead, all three left at once and completed together.
  ASSERT_GT(done[0], 0);
  EXPECT_GT(done[1], done[0]);
  EXPECT_EQ(done[2] - done[1], done[1] - done[0]);
  EXPECT_TRUE(r.cluster->network().conservation_violations().empty());
}

TEST(RemoteMemory, AClosedNicPairHoldsBackOnlyItsOwnReads) {
  SystemRun r = reads_on_two_nodes();
  RemoteMemory memory(*r.cluster);
  int64_t first = -1, queued = -1, other_pair = -1, nvlink = -1;
  memory.read(0, 2, 128, [&] { first = r.sim.now().ps(); });
  memory.read(0, 2, 128, [&] { queued = r.sim.now().ps(); });  // waits for the pair 0 -> 2
  memory.read(0, 3, 128, [&] { other_pair = r.sim.now().ps(); });
  memory.read(0, 1, 128, [&] { nvlink = r.sim.now().ps(); });
  // Issued after the waiting read, both went out at once: the pair 0 -> 3 is closed now.
  EXPECT_FALSE(r.cluster->network().can_send_to(0, 3, 0, PacketKind::ReadRequest));
  r.sim.run();
  ASSERT_GT(first, 0);
  EXPECT_GT(queued, first);
  EXPECT_LT(other_pair, queued);
  EXPECT_LT(nvlink, first);  // one NVLink hop against PCIe, NIC and switch each way
  EXPECT_TRUE(r.cluster->network().conservation_violations().empty());
}

}  // namespace
}  // namespace moehub
