// Back-pressure at flow fidelity: a sender hands the flow network a message only while its
// outstanding messages on that path fit the window (src/net/send_windows.h).

#include <gtest/gtest.h>

#include <vector>

#include "net/flow_network.h"
#include "net/net_test_util.h"

namespace moehub {
namespace {

// Sends `total` messages of `payload` bytes from GPU 0 to `dst` as fast as the window lets it,
// recording when each was accepted; woken by the network, never polling.
struct Sender final : RoomListener {
  Sender(Simulator& s, Network& n, int d, int count, uint32_t bytes) : sim(s), net(n), dst(d), total(count), payload(bytes) {}
  void pump() {
    while (static_cast<int>(accepted.size()) < total && net.can_send_to(0, dst, payload)) {
      Packet p;
      p.src = 0;
      p.dst = dst;
      p.payload_bytes = payload;
      net.send(std::move(p));
      accepted.push_back(sim.now().ps());
    }
    if (static_cast<int>(accepted.size()) < total) net.request_room_to(0, dst, this);
  }
  void on_room(int) override { pump(); }
  Simulator& sim;
  Network& net;
  int dst;
  int total;
  uint32_t payload;
  std::vector<int64_t> accepted;
};

// One plane; the egress FIFO and the plane's switch buffer hold one 128 B message each (9
// flits, 144 B on the wire): an NVLink window of two messages.
TEST(SendWindows, NvlinkWindowOfTwoMessagesAcceptsTheRestAsEarlierOnesAreDelivered) {
  NetConfig cfg = test::h800_like(2, 1);
  cfg.fidelity = NetFidelity::Flow;
  cfg.egress_buffer_bytes = 144;
  cfg.switch_buffer_bytes = 144;
  Simulator sim;
  FlowNetwork net(cfg, sim);
  Sender tx(sim, net, 1, 5, 128);
  tx.pump();
  sim.run();
  // Messages 1 and 2 share 200 GB/s: 2 x 144 B leave by 1440 ps; the last packet's tail is
  // 144 B at 200 GB/s (720 ps) plus 250 + 100 + 250 ns, so both are delivered at 602160 ps,
  // when 3 and 4 are accepted. They are delivered 602160 ps later, at 1204320 ps: message 5.
  ASSERT_EQ(tx.accepted.size(), 5u);
  EXPECT_EQ(tx.accepted[0], 0);
  EXPECT_EQ(tx.accepted[1], 0);
  EXPECT_EQ(tx.accepted[2], 602160);
  EXPECT_EQ(tx.accepted[3], 602160);
  EXPECT_EQ(tx.accepted[4], 1204320);
  EXPECT_TRUE(net.conservation_violations().empty());
}

// Across nodes the window is the queue pair's depth in messages (net.nic_send_queue_depth),
// whatever their size; the NVLink window of the same GPU stays open meanwhile.
TEST(SendWindows, NicWindowCountsMessagesPerPair) {
  NetConfig cfg = test::cluster_like(16, 8);
  cfg.nic_send_queue_depth = 2;
  Simulator sim;
  FlowNetwork net(cfg, sim);
  Sender tx(sim, net, 8, 3, 1 << 20);
  tx.pump();
  EXPECT_EQ(tx.accepted.size(), 2u);
  EXPECT_FALSE(net.can_send_to(0, 8, 1));
  EXPECT_TRUE(net.can_send_to(0, 9, 1));  // another queue pair
  EXPECT_TRUE(net.can_send_to(0, 1, 1));  // NVLink
  EXPECT_TRUE(net.can_send_any(0, 1));
  sim.run();
  ASSERT_EQ(tx.accepted.size(), 3u);
  EXPECT_GT(tx.accepted[2], 0);
  EXPECT_TRUE(net.conservation_violations().empty());
}

}  // namespace
}  // namespace moehub
