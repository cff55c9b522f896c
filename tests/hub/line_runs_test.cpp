// hub.flow_line_runs (a stated reduction): a run of whole lines of one store is one RPM entry,
// one scheduling decision, one flow message. Every expectation below is computed by hand.

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <vector>

#include "hub/runtime_packet_manager.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"

namespace moehub {
namespace {

// 1 GHz hub clock (one cycle = 1000 ps), one packet per cycle, 128 B lines.
RpmConfig runs_rpm(uint32_t entries_per_peer) {
  RpmConfig c;
  c.clock = Frequency::hertz(1000000000);
  c.partitions = 8;
  c.entries_per_peer = entries_per_peer;
  c.entry_bytes = 128;
  c.mask_granule_bytes = 4;
  c.timer_bypass = Time::zero();
  c.issue_cycles = 1;
  return c;
}

class RecordingPort final : public PacketPort {
 public:
  explicit RecordingPort(Simulator& sim) : sim_(sim) {}
  bool can_send(uint32_t, uint32_t) const override { return open; }
  bool try_send(const HubPacket& p) override {
    if (!open) return false;
    sent.push_back({sim_.now(), p});
    return true;
  }
  void notify_when_ready(uint32_t, Callback ready) override { waiting.push_back(std::move(ready)); }
  void open_now() {
    open = true;
    for (Callback& cb : waiting) cb();
    waiting.clear();
  }
  struct Sent {
    Time at;
    HubPacket p;
  };
  bool open = true;
  std::vector<Sent> sent;
  std::vector<Callback> waiting;

 private:
  Simulator& sim_;
};

RemoteStore row_store(uint64_t row, uint64_t offset, uint32_t bytes) {
  return RemoteStore::from(RowspStore{MallocId::encode(1, 2), row, offset, bytes, false});
}

// A run of 3 lines to peer 0 leaves as one packet at 0 ps; the next issue slot is 3 cycles
// later (the 3 lines' issue time), so peer 1's line leaves at 3000 ps. Counters count lines.
TEST(LineRuns, ARunLeavesAsOneBurstAndHoldsTheIssueSlotForItsLines) {
  Simulator sim;
  RecordingPort port(sim);
  RuntimePacketManager rpm(sim, runs_rpm(8), 2, port);
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 0, 384), 3, 3, 8));
  ASSERT_TRUE(rpm.try_store(1, row_store(0, 0, 128)));
  sim.run();
  ASSERT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(port.sent[0].at.ps(), 0);
  EXPECT_EQ(port.sent[0].p.peer, 0u);
  EXPECT_EQ(port.sent[0].p.lines, 3u);
  EXPECT_EQ(port.sent[0].p.payload_bytes, 384u);
  EXPECT_EQ(port.sent[0].p.row_offset, 0u);
  EXPECT_EQ(port.sent[0].p.valid_mask, ~uint32_t{0});  // each line whole: 32 granules of 4 B
  EXPECT_EQ(port.sent[1].at.ps(), 3000);
  EXPECT_EQ(port.sent[1].p.peer, 1u);
  const RpmCounters c = rpm.counters();
  EXPECT_EQ(c.packets, 4u);
  EXPECT_EQ(c.full_packets, 4u);
  EXPECT_EQ(c.payload_bytes, 512u);
  EXPECT_EQ(c.stores, 4u);
  EXPECT_EQ(c.merges, 0u);
}

// A run takes one entry per line; lines that continue the latest run join it up to the limit;
// 64 B transactions count two stores per line, one of them merged.
TEST(LineRuns, RunsTakeTheirLinesEntriesAndJoinTheLatestRunUpToTheLimit) {
  Simulator sim;
  RecordingPort port(sim);
  port.open = false;
  RuntimePacketManager rpm(sim, runs_rpm(8), 1, port);
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 0, 256), 2, 4, 8));
  EXPECT_EQ(rpm.pool().free_entries(0), 6u);
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 256, 384), 3, 6, 8));  // lines 2-4 join lines 0-1
  EXPECT_EQ(rpm.pool().free_entries(0), 3u);
  EXPECT_EQ(rpm.buffered(), 1u);
  EXPECT_FALSE(rpm.try_store_run(0, row_store(5, 640, 512), 4, 8, 8));  // 4 lines, 3 free
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 640, 384), 3, 6, 8));   // 5 + 3 = 8: joins
  EXPECT_EQ(rpm.pool().free_entries(0), 0u);
  EXPECT_EQ(rpm.buffered(), 1u);
  port.open_now();
  sim.run();
  ASSERT_EQ(port.sent.size(), 1u);
  EXPECT_EQ(port.sent[0].p.lines, 8u);
  EXPECT_EQ(port.sent[0].p.payload_bytes, 1024u);
  EXPECT_EQ(port.sent[0].p.stores_merged, 16u);
  EXPECT_EQ(rpm.pool().free_entries(0), 8u);
  EXPECT_EQ(rpm.buffered(), 0u);
  const RpmCounters c = rpm.counters();
  EXPECT_EQ(c.packets, 8u);
  EXPECT_EQ(c.stores, 16u);
  EXPECT_EQ(c.merges, 8u);
  EXPECT_EQ(c.store_refusals, 1u);
}

// st. runs (the combine's stores, hub.flow_line_runs_st) never join: two 2-line stores at
// consecutive addresses to one peer stay two entries (4 of 8 entries taken) and leave as two
// packets, the second 2 issue cycles after the first (0 and 2000 ps); 6 stores, 4 lines sent.
TEST(LineRuns, StRunsDoNotJoinTheLatestRun) {
  Simulator sim;
  RecordingPort port(sim);
  port.open = false;
  RuntimePacketManager rpm(sim, runs_rpm(8), 1, port);
  ASSERT_TRUE(rpm.try_store_run(0, RemoteStore::plain(4096, 256), 2, 2, 8));
  ASSERT_TRUE(rpm.try_store_run(0, RemoteStore::plain(4096 + 256, 256), 2, 4, 8));
  EXPECT_EQ(rpm.buffered(), 2u);
  EXPECT_EQ(rpm.pool().free_entries(0), 4u);
  port.open_now();
  sim.run();
  ASSERT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(port.sent[0].at.ps(), 0);
  EXPECT_EQ(port.sent[0].p.address, 4096u);
  EXPECT_EQ(port.sent[0].p.lines, 2u);
  EXPECT_EQ(port.sent[1].at.ps(), 2000);
  EXPECT_EQ(port.sent[1].p.address, 4096u + 256u);
  EXPECT_EQ(port.sent[1].p.lines, 2u);
  EXPECT_EQ(port.sent[1].p.stores_merged, 4u);
  const RpmCounters c = rpm.counters();
  EXPECT_EQ(c.packets, 4u);
  EXPECT_EQ(c.stores, 6u);
  EXPECT_EQ(c.merges, 2u);
}

// With a limit of 4 lines the third run (lines 4-5) does not join lines 0-3: two entries.
TEST(LineRuns, ARunOverTheLimitStartsAnEntryOfItsOwn) {
  Simulator sim;
  RecordingPort port(sim);
  port.open = false;
  RuntimePacketManager rpm(sim, runs_rpm(8), 1, port);
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 0, 256), 2, 2, 4));
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 256, 256), 2, 2, 4));
  ASSERT_TRUE(rpm.try_store_run(0, row_store(5, 512, 256), 2, 2, 4));
  EXPECT_EQ(rpm.buffered(), 2u);
  port.open_now();
  sim.run();
  ASSERT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(port.sent[0].p.lines, 4u);
  EXPECT_EQ(port.sent[1].p.lines, 2u);
  EXPECT_EQ(port.sent[1].p.row_offset, 512u);
  EXPECT_EQ(port.sent[1].at.ps(), 4000);  // after the first run's 4 issue cycles
}

// The row in progress goes on after a run's last line (paper: rows leave contiguously): row 7's
// line 4 leaves before row 2 although row 2 has the smaller RowID. Both arrive when the run
// frees its 4 entries (at 0 ps); the next issue slot is 4000 ps.
TEST(LineRuns, TheRowInProgressGoesOnAfterTheRunsLastLine) {
  Simulator sim;
  RecordingPort port(sim);
  RuntimePacketManager rpm(sim, runs_rpm(4), 1, port);
  ASSERT_TRUE(rpm.try_store_run(0, row_store(7, 0, 512), 4, 4, 8));
  ASSERT_FALSE(rpm.try_store(0, row_store(2, 0, 128)));
  rpm.notify_when_space(0, [&] {
    ASSERT_TRUE(rpm.try_store(0, row_store(2, 0, 128)));
    ASSERT_TRUE(rpm.try_store(0, row_store(7, 512, 128)));
  });
  sim.run();
  ASSERT_EQ(port.sent.size(), 3u);
  EXPECT_EQ(port.sent[0].p.row_id, 7u);
  EXPECT_EQ(port.sent[1].at.ps(), 4000);
  EXPECT_EQ(port.sent[1].p.row_id, 7u);
  EXPECT_EQ(port.sent[1].p.row_offset, 512u);
  EXPECT_EQ(port.sent[2].at.ps(), 5000);
  EXPECT_EQ(port.sent[2].p.row_id, 2u);
}

struct RunArrivals final : PacketReceiver {
  Simulator* sim = nullptr;
  std::vector<std::pair<uint64_t, int64_t>> at;  // (cookie, ps)
  std::vector<uint32_t> messages;
  void deliver(Packet&& p) override {
    at.emplace_back(p.cookie, sim->now().ps());
    messages.push_back(p.messages);
  }
};

// Runs of the given line counts sent 0 -> 1 at t = 0 on a 2-GPU h800_like board at flow fidelity
// with 1 KiB flow batches, simulated to the end (cookie = the run's lines).
struct RunBench {
  Simulator sim;
  std::unique_ptr<FlowNetwork> net;
  RunArrivals rx;
  explicit RunBench(std::initializer_list<uint32_t> runs) {
    NetConfig c = test::h800_like(2);
    c.fidelity = NetFidelity::Flow;
    c.flow_merge_pairs = true;
    c.flow_batch_bytes = 1024;
    net = std::make_unique<FlowNetwork>(c, sim);
    rx.sim = &sim;
    net->set_receiver(1, &rx);
    for (uint32_t lines : runs) {
      Packet p;
      p.src = 0;
      p.dst = 1;
      p.payload_bytes = 128 * lines;
      p.messages = static_cast<uint8_t>(lines);
      p.cookie = lines;
      p.flow_batch = Packet::kFlowBatchLine;
      net->send(std::move(p));
    }
    sim.run();
  }
};

// A 128 B message 0 -> 1, then a run of 3 lines (Packet::messages 3, 384 B) at t = 0 on
// h800_like: 144 wire bytes a line at 200 GB/s, 720 ps each; a line's tail is 602880 ps
// (tests/net/flow_batch_test.cpp). The line arrives at 720 + 602880, the run when its third
// line would have (4 x 720 + 602880), as a batch of those lines would; the window takes its
// three lines' wire bytes and gives them back (no violation).
TEST(LineRuns, ARunIsItsLinesBackToBackInTheFlowNetwork) {
  RunBench b({1u, 3u});
  const RunArrivals& rx = b.rx;
  ASSERT_EQ(rx.at.size(), 2u);
  EXPECT_EQ(rx.at[0], std::make_pair(uint64_t{1}, int64_t{720 + 602880}));
  EXPECT_EQ(rx.at[1], std::make_pair(uint64_t{3}, int64_t{2880 + 602880}));
  EXPECT_EQ(rx.messages[1], 3u);
  EXPECT_TRUE(b.net->conservation_violations().empty());
}

// hub.flow_run_bytes beyond net.flow_batch_bytes: a run of 16 lines (2 KiB) after a line is a
// flow batch of its own (it cannot join a 1 KiB batch) and arrives when its 16th line would
// (17 x 720 + 602880 ps); the line after it starts another batch (2 KiB + 128 B is over the
// limit) and arrives one line later (18 x 720 + 602880). The window gets every line back.
TEST(LineRuns, ARunLongerThanABatchIsABatchOfItsOwn) {
  RunBench b({1u, 16u, 1u});
  const RunArrivals& rx = b.rx;
  ASSERT_EQ(rx.at.size(), 3u);
  EXPECT_EQ(rx.at[0].second, 720 + 602880);
  EXPECT_EQ(rx.at[1], std::make_pair(uint64_t{16}, int64_t{17 * 720 + 602880}));
  EXPECT_EQ(rx.messages[1], 16u);
  EXPECT_EQ(rx.at[2].second, 18 * 720 + 602880);
  EXPECT_EQ(b.net->stats()["flows_completed"], 3u);
  EXPECT_TRUE(b.net->conservation_violations().empty());
}

// Across nodes a run takes one NIC window slot per line: with a queue depth of 4 a run of 3
// lines leaves room for one more message, and the RDMA counters count 3 messages.
TEST(LineRuns, ARunTakesOneNicWindowSlotPerLine) {
  NetConfig c = test::cluster_like(16, 8);
  c.nic_send_queue_depth = 4;
  c.flow_merge_pairs = true;
  c.flow_batch_bytes = 1024;
  Simulator sim;
  FlowNetwork net(c, sim);
  Packet p;
  p.src = 0;
  p.dst = 8;
  p.payload_bytes = 384;
  p.messages = 3;
  p.flow_batch = Packet::kFlowBatchLine;
  ASSERT_TRUE(net.can_send_to(0, 8, 128));
  net.send(std::move(p));
  EXPECT_TRUE(net.can_send_to(0, 8, 128));
  Packet q;
  q.src = 0;
  q.dst = 8;
  q.payload_bytes = 128;
  q.flow_batch = Packet::kFlowBatchLine;
  net.send(std::move(q));
  EXPECT_FALSE(net.can_send_to(0, 8, 128));
  sim.run();
  EXPECT_TRUE(net.can_send_to(0, 8, 128));
  EXPECT_EQ(net.stats()["rdma_messages"], 4u);
  EXPECT_TRUE(net.conservation_violations().empty());
}

}  // namespace
}  // namespace moehub
