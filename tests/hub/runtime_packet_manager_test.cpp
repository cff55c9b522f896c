#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "hub/runtime_packet_manager.h"
#include "sim/rng.h"

namespace moehub {
namespace {

RpmConfig small_rpm(uint32_t entries_per_peer, Time timer = Time::zero(), uint32_t granule = 4) {
  RpmConfig c;
  c.clock = Frequency::hertz(1000000000);  // 1 cycle = 1000 ps
  c.partitions = 8;
  c.entries_per_peer = entries_per_peer;
  c.entry_bytes = 128;
  c.mask_granule_bytes = granule;
  c.timer_bypass = timer;
  c.issue_cycles = 1;
  return c;
}

// The network's egress: records what it accepts; can refuse a peer until opened again.
class FakePort : public PacketPort {
 public:
  explicit FakePort(Simulator& sim) : sim_(sim) {}
  bool can_send(uint32_t peer, uint32_t) const override { return !closed_.count(peer); }
  bool try_send(const HubPacket& p) override {
    if (closed_.count(p.peer)) return false;
    if (on_send) on_send(p);
    sent.push_back({sim_.now(), p});
    return true;
  }
  void notify_when_ready(uint32_t peer, Callback ready) override { waiting_[peer].push_back(std::move(ready)); }
  void close(uint32_t peer) { closed_.insert(peer); }
  void open(uint32_t peer) {
    closed_.erase(peer);
    for (Callback& cb : waiting_[peer]) cb();
    waiting_[peer].clear();
  }
  struct Sent {
    Time at;
    HubPacket p;
  };
  std::vector<Sent> sent;
  std::function<void(const HubPacket&)> on_send;

 private:
  Simulator& sim_;
  std::set<uint32_t> closed_;
  std::map<uint32_t, std::vector<Callback>> waiting_;
};

RemoteStore rowsp(uint64_t row, uint64_t offset, uint32_t bytes, bool nop = false) {
  RowspStore s{MallocId::encode(1, 2), row, offset, bytes, nop};
  return RemoteStore::from(s);
}

TEST(Rpm, MergesSmallRowspStoresIntoFull128BytePackets) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4), 2, port);
  // Eight 16 B stores, one per nanosecond, fill one line; the packet leaves on the cycle the
  // last store completes it.
  for (int i = 0; i < 8; ++i) {
    sim.schedule_at(Time::from_ns(i), [&, i] { ASSERT_TRUE(rpm.try_store(1, rowsp(5, 256 + 16 * i, 16))); });
  }
  // Four 32 B stores to the next line, all at 10 ns.
  sim.schedule_at(Time::from_ns(10), [&] {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(rpm.try_store(1, rowsp(5, 384 + 32 * i, 32)));
  });
  sim.run();
  ASSERT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(port.sent[0].at.ps(), 7000);
  const HubPacket& a = port.sent[0].p;
  EXPECT_TRUE(a.rowsp);
  EXPECT_EQ(a.peer, 1u);
  EXPECT_EQ(a.malloc_id, MallocId::encode(1, 2));
  EXPECT_EQ(a.row_id, 5u);
  EXPECT_EQ(a.row_offset, 256u);
  EXPECT_EQ(a.payload_bytes, 128u);
  EXPECT_EQ(a.valid_mask, 0xFFFFFFFFu);
  EXPECT_EQ(a.stores_merged, 8u);
  EXPECT_FALSE(a.timer_bypass);
  EXPECT_EQ(port.sent[1].at.ps(), 10000);
  EXPECT_EQ(port.sent[1].p.row_offset, 384u);
  const RpmCounters st = rpm.counters();
  EXPECT_EQ(st.merges, 10u);  // 7 + 3 stores merged into an existing entry
  EXPECT_EQ(st.packets, 2u);
  EXPECT_EQ(rpm.mean_packet_fill(), 1.0);
  EXPECT_EQ(rpm.buffered(), 0u);
}

TEST(Rpm, PlainStoresMergeByCacheLineAndPrioritiesDoNotMix) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4), 1, port);
  ASSERT_TRUE(rpm.try_store(0, RemoteStore::plain(0x1000 + 64, 64)));
  ASSERT_TRUE(rpm.try_store(0, RemoteStore::plain(0x1000 + 96, 32, /*nop=*/true)));  // same line, other class
  ASSERT_TRUE(rpm.try_store(0, RemoteStore::plain(0x1000, 64)));                      // completes the line
  ASSERT_TRUE(rpm.try_store(0, RemoteStore::plain(0x10F0, 32)));                      // straddles two lines
  EXPECT_EQ(rpm.buffered(), 4u);  // 0x1000 (full), 0x1000 .nop, 0x1080 and 0x1100 (the straddling store)
  sim.run();
  ASSERT_EQ(port.sent.size(), 1u);
  EXPECT_EQ(port.sent[0].p.address, 0x1000u);
  EXPECT_FALSE(port.sent[0].p.nop);
  EXPECT_EQ(port.sent[0].p.payload_bytes, 128u);
  rpm.flush();
  sim.run();
  ASSERT_EQ(port.sent.size(), 4u);
  EXPECT_EQ(port.sent[1].p.address, 0x1080u);  // priority class before .nop; plain stores in arrival order
  EXPECT_EQ(port.sent[1].p.valid_mask, 0xF0000000u);
  EXPECT_TRUE(port.sent[1].p.flushed);
  EXPECT_EQ(port.sent[2].p.address, 0x1100u);
  EXPECT_EQ(port.sent[2].p.valid_mask, 0xFu);
  EXPECT_TRUE(port.sent[3].p.nop);
  EXPECT_EQ(port.sent[3].p.address, 0x1000u);
  EXPECT_EQ(port.sent[3].p.payload_bytes, 32u);
}

TEST(Rpm, FullEntriesGoFirstAndPartialOnesWaitWithoutTimer) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4), 1, port);
  ASSERT_TRUE(rpm.try_store(0, rowsp(1, 0, 64)));   // row 1: half a line
  ASSERT_TRUE(rpm.try_store(0, rowsp(5, 0, 128)));  // row 5: a full line
  sim.run();
  ASSERT_EQ(port.sent.size(), 1u);
  EXPECT_EQ(port.sent[0].p.row_id, 5u);
  EXPECT_EQ(rpm.buffered(), 1u);  // with the bypass off the partial entry waits for a flush
  bool drained = false;
  rpm.notify_when_drained([&] { drained = true; });
  sim.schedule_at(Time::from_us(5), [&] { rpm.flush(); });
  sim.run();
  ASSERT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(port.sent[1].at, Time::from_us(5));
  EXPECT_EQ(port.sent[1].p.row_id, 1u);
  EXPECT_EQ(rpm.counters().flushed_packets, 1u);
  EXPECT_TRUE(drained);
}

// Consumer-aware priority (paper IV-B2): the smallest RowID goes first, but a row already begun
// is finished while its next line is there, so that rows arrive whole ("transferred
// contiguously") instead of being pre-empted and left partly sent by each smaller RowID.
TEST(Rpm, ARowInProgressIsFinishedBeforeASmallerRowId) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(8), 1, port);
  port.close(0);
  for (uint64_t line = 0; line < 3; ++line) ASSERT_TRUE(rpm.try_store(0, rowsp(7, line * 128, 128)));
  ASSERT_TRUE(rpm.try_store(0, rowsp(4, 0, 128)));  // row 4 first: it is the smallest
  port.open(0);
  sim.run();
  ASSERT_EQ(port.sent.size(), 4u);
  EXPECT_EQ(port.sent[0].p.row_id, 4u);
  EXPECT_EQ(port.sent[1].p.row_id, 7u);
  // Row 7 has begun: a smaller RowID arriving now waits until row 7's present lines are sent.
  port.close(0);
  ASSERT_TRUE(rpm.try_store(0, rowsp(2, 0, 128)));
  ASSERT_TRUE(rpm.try_store(0, rowsp(2, 128, 128)));
  port.open(0);
  sim.run();
  std::vector<std::pair<uint64_t, uint64_t>> order;
  for (const auto& s : port.sent) order.emplace_back(s.p.row_id, s.p.row_offset / 128);
  const std::vector<std::pair<uint64_t, uint64_t>> want{{4, 0}, {7, 0}, {7, 1}, {7, 2}, {2, 0}, {2, 1}};
  EXPECT_EQ(order, want);
}

TEST(Rpm, TimerBypassSendsAPartialEntryWhenItsTimeIsUp) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4, Time::from_ns(100)), 1, port);
  sim.schedule_at(Time::from_ns(3), [&] { ASSERT_TRUE(rpm.try_store(0, rowsp(9, 0, 16))); });
  sim.schedule_at(Time::from_ns(50), [&] { ASSERT_TRUE(rpm.try_store(0, rowsp(9, 16, 16))); });
  sim.run();
  ASSERT_EQ(port.sent.size(), 1u);
  EXPECT_EQ(port.sent[0].at, Time::from_ns(103));  // created at 3 ns + 100 ns
  EXPECT_TRUE(port.sent[0].p.timer_bypass);
  EXPECT_EQ(port.sent[0].p.payload_bytes, 32u);
  EXPECT_EQ(rpm.counters().timer_bypasses, 1u);
  EXPECT_EQ(rpm.mean_packet_fill(), 0.25);
}

TEST(Rpm, PollsPartitionsRoundRobinOnePacketPerCycle) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4), 3, port);
  for (uint32_t peer : {0u, 1u, 2u}) {
    for (uint64_t row = 0; row < 2; ++row) ASSERT_TRUE(rpm.try_store(peer, rowsp(row, 0, 128)));
  }
  sim.run();
  ASSERT_EQ(port.sent.size(), 6u);
  const uint32_t peers[] = {0, 1, 2, 0, 1, 2};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(port.sent[i].p.peer, peers[i]);
    EXPECT_EQ(port.sent[i].at.ps(), static_cast<int64_t>(1000 * i));
    EXPECT_EQ(port.sent[i].p.row_id, i / 3);
  }
}

TEST(Rpm, ACongestedPeerDoesNotBlockTheOthers) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(4), 2, port);
  port.close(0);
  for (uint64_t row = 0; row < 3; ++row) {
    ASSERT_TRUE(rpm.try_store(0, rowsp(row, 0, 128)));
    ASSERT_TRUE(rpm.try_store(1, rowsp(row, 0, 128)));
  }
  sim.run();
  ASSERT_EQ(port.sent.size(), 3u);
  for (const auto& s : port.sent) EXPECT_EQ(s.p.peer, 1u);
  sim.schedule_at(Time::from_ns(20), [&] { port.open(0); });
  sim.run();
  ASSERT_EQ(port.sent.size(), 6u);
  EXPECT_EQ(port.sent[3].at, Time::from_ns(20));
  EXPECT_EQ(port.sent[3].p.peer, 0u);
  EXPECT_EQ(port.sent[5].p.row_id, 2u);
  EXPECT_GE(rpm.counters().port_refusals, 1u);
}

TEST(Rpm, AFullPartitionRefusesAndCallsBackWhenAnEntryLeaves) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(2), 1, port);
  port.close(0);
  ASSERT_TRUE(rpm.try_store(0, rowsp(0, 0, 64)));
  ASSERT_TRUE(rpm.try_store(0, rowsp(0, 128, 128)));
  ASSERT_TRUE(rpm.try_store(0, rowsp(0, 64, 32)));       // merges: no new entry needed
  EXPECT_FALSE(rpm.try_store(0, rowsp(1, 0, 128)));      // needs a third entry
  EXPECT_TRUE(rpm.try_store(0, rowsp(0, 96, 64)));       // 96..160 merges into both entries
  Time called = Time::max();
  rpm.notify_when_space(0, [&] { called = sim.now(); });
  sim.schedule_at(Time::from_ns(7), [&] { port.open(0); });
  sim.run();
  EXPECT_EQ(called, Time::from_ns(7));
  EXPECT_EQ(rpm.counters().store_refusals, 1u);
  EXPECT_EQ(port.sent.size(), 2u);
  EXPECT_EQ(rpm.mean_packet_fill(), 1.0);
}

TEST(Rpm, StoresThatAreNotWholeGranulesAreAConfigurationError) {
  Simulator sim;
  FakePort port(sim);
  RuntimePacketManager rpm(sim, small_rpm(2, Time::zero(), 16), 1, port);
  EXPECT_THROW(rpm.try_store(0, rowsp(0, 0, 8)), UserError);
  EXPECT_THROW(rpm.try_store(0, rowsp(0, 8, 16)), UserError);
  EXPECT_THROW(RuntimePacketManager(sim, small_rpm(2), 9, port), UserError);  // 9 peers, 8 partitions
}

// Property: with the timer bypass off, whenever a priority-class st.rowsp packet leaves a
// partition, no complete (sendable) entry of that partition and class has a smaller RowID, and no
// complete priority entry is waiting when a .nop packet leaves. Rows are written in random
// interleavings of 16/32/64 B stores across 3 peers while the port refuses at random.
TEST(RpmProperty, NeverSendsALaterRowAheadOfAnEarlierOneExceptToFinishARowInProgress) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Simulator sim;
    FakePort port(sim);
    // 64 entries hold every line of a peer: with the bypass off, a partition full of partial
    // entries whose completing stores wait behind it would never drain.
    RuntimePacketManager rpm(sim, small_rpm(64), 3, port);
    Rng rng(seed, 7);
    // Shadow of the buffer: per (peer, nop, row, line) the bytes stored so far.
    std::map<std::tuple<uint32_t, bool, uint64_t, uint64_t>, uint32_t> shadow;
    uint64_t checked = 0;
    // Per peer, the priority line sent last: the next line of its row may go on ahead of a
    // smaller RowID (a row in progress is finished, candidate() rule 3).
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> sending;
    port.on_send = [&](const HubPacket& p) {
      const auto key = std::make_tuple(p.peer, p.nop, p.row_id, p.row_offset / 128);
      const auto last = sending.find(p.peer);
      const bool continues = !p.nop && last != sending.end() && last->second.first == p.row_id &&
                             last->second.second + 1 == p.row_offset / 128;
      if (!p.nop) sending[p.peer] = {p.row_id, p.row_offset / 128};
      for (const auto& [k, bytes] : shadow) {
        if (bytes < 128 / 16 || k == key || std::get<0>(k) != p.peer) continue;  // counts 16 B pieces
        if (std::get<1>(k) == p.nop && !continues) {
          ASSERT_GE(std::get<2>(k), p.row_id) << "row " << p.row_id << " sent before complete row " << std::get<2>(k);
        }
        if (p.nop) {
          ASSERT_TRUE(std::get<1>(k)) << ".nop sent while a complete priority entry waited";
        }
      }
      shadow.erase(key);
      ++checked;
    };
    // Each row: 256 B of data (priority) and a 128 B metadata line (.nop), in stores of 16-64 B.
    struct Pending {
      uint32_t peer;
      RemoteStore s;
    };
    std::vector<Pending> stores;
    for (uint32_t peer = 0; peer < 3; ++peer) {
      for (uint64_t row = 0; row < 12; ++row) {
        for (bool nop : {false, true}) {
          const uint64_t bytes = nop ? 128 : 256;
          for (uint64_t off = 0; off < bytes;) {
            const uint32_t size = std::min<uint32_t>(16u << rng.below(3), static_cast<uint32_t>(bytes - off));
            stores.push_back({peer, rowsp(row, (nop ? 256 : 0) + off, size, nop)});
            off += size;
          }
        }
      }
    }
    rng.shuffle(stores);
    size_t next = 0;
    std::function<void()> feed = [&] {
      while (next < stores.size()) {
        const Pending& s = stores[next];
        if (!rpm.try_store(s.peer, s.s)) {
          rpm.notify_when_space(s.peer, [&] { feed(); });
          return;
        }
        for (uint64_t b = s.s.row_offset; b < s.s.row_offset + s.s.bytes; b += 16) {  // sizes are multiples of 16
          ++shadow[std::make_tuple(s.peer, s.s.nop, s.s.row_id, b / 128)];
        }
        ++next;
        if (rng.below(4) == 0) {  // pause: let the scheduler and the port act
          sim.schedule_in(Time::from_ns(static_cast<int64_t>(rng.below(5))), [&] { feed(); });
          return;
        }
      }
    };
    // The port closes and opens at random for each peer.
    std::function<void(uint32_t)> toggle = [&](uint32_t peer) {
      if (rng.below(2)) {
        port.close(peer);
      } else {
        port.open(peer);
      }
      if (sim.now() < Time::from_us(2)) sim.schedule_in(Time::from_ns(static_cast<int64_t>(1 + rng.below(6))), [&, peer] { toggle(peer); });
      else port.open(peer);
    };
    for (uint32_t peer = 0; peer < 3; ++peer) toggle(peer);
    feed();
    sim.run();
    ASSERT_EQ(next, stores.size());
    EXPECT_EQ(rpm.buffered(), 0u);  // every line of every row became full and left
    EXPECT_EQ(checked, 3u * 12 * 3);
    EXPECT_EQ(rpm.counters().timer_bypasses, 0u);
    EXPECT_EQ(rpm.mean_packet_fill(), 1.0);
  }
}

// An egress FIFO shared by every peer (the hub's port to the fabric): it holds `capacity`
// payload bytes and sends one packet every `drain`; each departure calls every waiter back.
// With `answers` it also says when it accepts nothing, which lets the scheduler skip offers.
class SharedQueuePort : public PacketPort {
 public:
  SharedQueuePort(Simulator& sim, uint32_t capacity, Time drain, bool answers)
      : sim_(sim), capacity_(capacity), drain_(drain), answers_(answers) {}
  bool can_send(uint32_t, uint32_t payload) const override { return queued_ + payload <= capacity_; }
  bool try_send(const HubPacket& p) override {
    ++offers;
    if (!can_send(p.peer, p.payload_bytes)) return false;
    sent.push_back({sim_.now(), p});
    queue_.push_back(p.payload_bytes);
    queued_ += p.payload_bytes;
    if (queue_.size() == 1) sim_.schedule_in(drain_, [this] { depart(); });
    return true;
  }
  void notify_when_ready(uint32_t, Callback ready) override { waiting_.push_back(std::move(ready)); }
  bool accepts_nothing(uint32_t payload) const override { return answers_ && !can_send(0, payload); }
  std::vector<FakePort::Sent> sent;
  uint64_t offers = 0;

 private:
  void depart() {
    queued_ -= queue_.front();
    queue_.erase(queue_.begin());
    if (!queue_.empty()) sim_.schedule_in(drain_, [this] { depart(); });
    std::vector<Callback> ready;
    ready.swap(waiting_);
    for (Callback& cb : ready) cb();
  }
  Simulator& sim_;
  uint32_t capacity_;
  Time drain_;
  bool answers_;
  uint32_t queued_ = 0;
  std::vector<uint32_t> queue_;
  std::vector<Callback> waiting_;
};

// Skipping the offers a full port would refuse changes nothing that leaves: the same packets
// at the same times, with whole and partial stores, timer bypasses and a flush.
TEST(RpmProperty, WaitingOnAFullPortSendsWhatOfferingWouldHaveSent) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::vector<FakePort::Sent> sent[2];
    uint64_t offers[2] = {0, 0};
    uint64_t events[2] = {0, 0};
    for (int answers = 0; answers < 2; ++answers) {
      Simulator sim;
      // 3.5 whole packets of room: the port is full for a whole entry but not for a partial one.
      SharedQueuePort port(sim, 448, Time::from_ns(3), answers == 1);
      RuntimePacketManager rpm(sim, small_rpm(6, Time::from_ns(40), 32), 3, port);
      Rng rng(seed, 0);
      uint64_t row = 0;
      std::function<void()> feed = [&] {
        const uint32_t peer = static_cast<uint32_t>(rng.below(3));
        const bool whole = rng.below(5) != 0;
        const uint32_t bytes = whole ? 128 : 32 * static_cast<uint32_t>(1 + rng.below(3));
        if (rpm.try_store(peer, rowsp(row, 0, bytes))) ++row;
        if (row < 300) sim.schedule_in(Time::from_ps(static_cast<int64_t>(200 + rng.below(2500))), [&] { feed(); });
        else sim.schedule_in(Time::from_ns(5), [&] { rpm.flush(); });
      };
      feed();
      sim.run();
      sent[answers] = port.sent;
      offers[answers] = port.offers + rpm.counters().port_refusals;
      events[answers] = sim.events_executed();
      EXPECT_EQ(rpm.buffered(), 0u);
    }
    ASSERT_EQ(sent[0].size(), sent[1].size()) << seed;
    for (size_t i = 0; i < sent[0].size(); ++i) {
      EXPECT_EQ(sent[0][i].at, sent[1][i].at) << seed << " packet " << i;
      EXPECT_EQ(sent[0][i].p.peer, sent[1][i].p.peer) << seed << " packet " << i;
      EXPECT_EQ(sent[0][i].p.row_id, sent[1][i].p.row_id) << seed << " packet " << i;
      EXPECT_EQ(sent[0][i].p.payload_bytes, sent[1][i].p.payload_bytes) << seed << " packet " << i;
    }
    EXPECT_LT(offers[1], offers[0]) << seed;
    EXPECT_LT(events[1], events[0]) << seed;
  }
}

}  // namespace
}  // namespace moehub
