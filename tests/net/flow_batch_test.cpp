// net.flow_batch_bytes (a stated reduction): a message its sender marks batchable joins the
// last queued message of its pair's merged flow, up to that many payload bytes, and arrives
// with it. Every expectation below is computed by hand.

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "sim/error.h"

namespace moehub {
namespace {

struct Arrivals final : PacketReceiver {
  Simulator* sim = nullptr;
  bool takes_batches = false;  // deliver_batch takes a batch whole (MoE-Hub's hub.flow_batch_runs)
  std::vector<std::pair<uint64_t, int64_t>> at;  // (cookie, ps)
  std::vector<size_t> batches;                   // messages per batch taken whole
  void deliver(Packet&& p) override { at.emplace_back(p.cookie, sim->now().ps()); }
  bool deliver_batch(std::span<const Packet> packets) override {
    if (!takes_batches) return false;
    batches.push_back(packets.size());
    for (const Packet& p : packets) at.emplace_back(p.cookie, sim->now().ps());
    return true;
  }
};

// Four 128 B messages 0 -> 1 at t = 0 on h800_like: 144 wire bytes each at 200 GB/s, so the
// pair's flow serves one every 720 ps; each arrives after its payload has left plus the last
// packet's plane link (144 B at 50 GB/s, 2880 ps) and 250 + 100 + 250 ns: 602880 ps.
std::vector<std::pair<uint64_t, int64_t>> four_lines(uint32_t batch_bytes, bool batchable, uint32_t last_bytes = 128,
                                                     Arrivals* receiver = nullptr) {
  NetConfig c = test::h800_like(2);
  c.fidelity = NetFidelity::Flow;
  c.flow_merge_pairs = true;
  c.flow_batch_bytes = batch_bytes;
  Simulator sim;
  FlowNetwork net(c, sim);
  Arrivals own;
  Arrivals& rx = receiver ? *receiver : own;
  rx.sim = &sim;
  net.set_receiver(1, &rx);
  for (uint64_t i = 0; i < 4; ++i) {
    Packet p;
    p.src = 0;
    p.dst = 1;
    p.payload_bytes = i == 3 ? last_bytes : 128;
    p.cookie = i;
    p.flow_batch = batchable;
    net.send(std::move(p));
  }
  sim.run();
  EXPECT_TRUE(net.conservation_violations().empty());  // every window slot came back
  return rx.at;
}

TEST(FlowBatch, ZeroIsExactOneMessageAtATime) {
  const auto at = four_lines(0, true);
  ASSERT_EQ(at.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(at[i].first, i);
    EXPECT_EQ(at[i].second, static_cast<int64_t>(720 * (i + 1) + 602880));
  }
}

// Batches of up to 256 B: message 0 is being served (never joined), 1 starts a batch that 2
// joins (256 B), 3 would exceed it and starts the next. A batch arrives when its last byte
// has: 1 and 2 both at 2160 + 602880 ps, when 2 alone would.
TEST(FlowBatch, ABatchOfLinesArrivesTogetherWhenItsLastByteHas) {
  const auto at = four_lines(256, true);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_EQ(at[0], std::make_pair(uint64_t{0}, int64_t{720 + 602880}));
  EXPECT_EQ(at[1], std::make_pair(uint64_t{1}, int64_t{2160 + 602880}));
  EXPECT_EQ(at[2], std::make_pair(uint64_t{2}, int64_t{2160 + 602880}));
  EXPECT_EQ(at[3], std::make_pair(uint64_t{3}, int64_t{2880 + 602880}));
}

// A receiver that takes a batch whole gets its messages at once, in order, at the same times
// as one by one ({0}, {1, 2}, {3}); every window slot still comes back (four_lines checks).
// Without batches it is never asked.
TEST(FlowBatch, AReceiverMayTakeABatchWhole) {
  Arrivals taker;
  taker.takes_batches = true;
  const auto at = four_lines(256, true, 128, &taker);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_EQ(taker.batches, (std::vector<size_t>{1, 2, 1}));
  EXPECT_EQ(at[0], std::make_pair(uint64_t{0}, int64_t{720 + 602880}));
  EXPECT_EQ(at[1], std::make_pair(uint64_t{1}, int64_t{2160 + 602880}));
  EXPECT_EQ(at[2], std::make_pair(uint64_t{2}, int64_t{2160 + 602880}));
  EXPECT_EQ(at[3], std::make_pair(uint64_t{3}, int64_t{2880 + 602880}));
  Arrivals exact;
  exact.takes_batches = true;
  EXPECT_EQ(four_lines(0, true, 128, &exact).size(), 4u);
  EXPECT_TRUE(exact.batches.empty());
}

TEST(FlowBatch, OnlyMarkedMessagesJoinAndTheLimitCountsBytes) {
  // Not marked: exact whatever the limit.
  const auto plain = four_lines(4096, false);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(plain[i].second, static_cast<int64_t>(720 * (i + 1) + 602880));
  // A 256 B last message (two packets, the same flow and tail) joins 1 and 2 under 4096 B:
  // 640 B of payload, 720 wire bytes, leave by 3600 ps.
  const auto big = four_lines(4096, true, 256);
  ASSERT_EQ(big.size(), 4u);
  EXPECT_EQ(big[0].second, 720 + 602880);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(big[i].second, 3600 + 602880);
  // Under 384 B it does not fit beside 1 and 2 (256 B): it leaves alone, by 3600 ps too.
  const auto tight = four_lines(384, true, 256);
  EXPECT_EQ(tight[1].second, 2160 + 602880);
  EXPECT_EQ(tight[2].second, 2160 + 602880);
  EXPECT_EQ(tight[3].second, 3600 + 602880);
}

// net.flow_store_batch_bytes: the store port's messages (Packet::kFlowBatchStore) batch under
// their own limit, only between nodes, and a batch takes only messages of its own kind. Four
// 4096 B messages of the given kinds (L line, S store) from GPU 0 to `dst` on test::cluster_like(4,
// 2), arrival times in ps less those of the message's last packet trip (see below).
std::vector<int64_t> four_of_kinds(uint32_t line_bytes, uint32_t store_bytes, const char* kinds, int dst = 2,
                                   int64_t trip = 0) {
  NetConfig c = test::cluster_like(4, 2);
  c.flow_merge_pairs = true;
  c.flow_batch_bytes = line_bytes;
  c.flow_store_batch_bytes = store_bytes;
  Simulator sim;
  FlowNetwork net(c, sim);
  Arrivals rx;
  rx.sim = &sim;
  net.set_receiver(dst, &rx);
  for (uint64_t i = 0; i < 4; ++i) {
    Packet p;
    p.src = 0;
    p.dst = dst;
    p.payload_bytes = 4096;
    p.cookie = i;
    p.flow_batch = kinds[i] == 'S' ? Packet::kFlowBatchStore : Packet::kFlowBatchLine;
    net.send(std::move(p));
  }
  sim.run();
  EXPECT_TRUE(net.conservation_violations().empty());
  std::vector<int64_t> ps;
  for (const auto& [cookie, t] : rx.at) {
    EXPECT_EQ(cookie, ps.size());  // in the order sent
    ps.push_back(t - trip);
  }
  return ps;
}

// Across nodes (GPU 0 to 2 meet on rail 0's leaf) a 4096 B message is one MTU packet, 4122 wire
// bytes at the 50 GB/s NIC: one leaves every 82440 ps; its last packet then takes 82440 ps more
// and 1450 ns of PCIe, NIC, cable and switch latency (tests/net/fabric_test.cpp): 1532440 ps.
void expect_times(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(static_cast<double>(got[i]), static_cast<double>(want[i]), 1.0) << i;
}

TEST(FlowBatch, StoresBatchBetweenNodesUnderTheirOwnLimitAndNeverWithLines) {
  constexpr int64_t kTrip = 1532440;
  // Stores under 8 KiB: {0} (being served), {1, 2} arriving when 2 alone would, {3}; the line
  // limit (0) plays no part.
  expect_times(four_of_kinds(0, 8192, "SSSS", 2, kTrip), {82440, 247320, 247320, 329760});
  // A store limit of 0 is exact even where lines batch.
  expect_times(four_of_kinds(8192, 0, "SSSS", 2, kTrip), {82440, 164880, 247320, 329760});
  // Both limits 16 KiB: a store never joins a line's batch nor a line a store's, so alternating
  // kinds leave one at a time; three stores behind a line form one batch.
  expect_times(four_of_kinds(16384, 16384, "LSLS", 2, kTrip), {82440, 164880, 247320, 329760});
  expect_times(four_of_kinds(16384, 16384, "LSSS", 2, kTrip), {82440, 329760, 329760, 329760});
}

// Inside a node stores stay one message each (GPU 0 to 1 over NVLink: 32 packets of 144 B at
// 200 GB/s, 23040 ps a message; the last packet's plane link and 600 ns, 602880 ps).
TEST(FlowBatch, StoresInsideANodeAreNeverBatched) {
  constexpr int64_t kTrip = 602880;
  expect_times(four_of_kinds(0, 16384, "SSSS", 1, kTrip), {23040, 46080, 69120, 92160});
  expect_times(four_of_kinds(0, 0, "SSSS", 1, kTrip), {23040, 46080, 69120, 92160});
}

TEST(FlowBatch, NeedsMergedPairs) {
  NetConfig c = test::h800_like(2);
  c.flow_batch_bytes = 4096;
  try {
    c.validate();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.flow_batch_bytes");
  }
  NetConfig s = test::h800_like(2);
  s.flow_store_batch_bytes = 4096;
  try {
    s.validate();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.flow_store_batch_bytes");
  }
}

}  // namespace
}  // namespace moehub
