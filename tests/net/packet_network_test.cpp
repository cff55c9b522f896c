// The packet fidelity: exact arrival times, link saturation, credit stalls, acks, back-pressure,
// incast fairness and head-of-line blocking. Expected times are computed by hand in comments.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "net/collectives.h"
#include "net/net_test_util.h"
#include "net/packet_network.h"

namespace moehub {
namespace {

// Records when each packet reached the receiver.
struct Recorder : PacketReceiver {
  Simulator& sim;
  std::vector<Time> at;
  std::vector<Packet> got;
  explicit Recorder(Simulator& s) : sim(s) {}
  void deliver(Packet&& p) override {
    at.push_back(sim.now());
    got.push_back(std::move(p));
  }
};

struct AckRecorder : PacketClient {
  Simulator& sim;
  std::vector<Time> ack_at;
  std::vector<uint64_t> cookies;
  std::vector<int> from;
  explicit AckRecorder(Simulator& s) : sim(s) {}
  void on_ack(const Packet& a) override {
    ack_at.push_back(sim.now());
    cookies.push_back(a.cookie);
    from.push_back(a.src);
  }
};

Packet write(int src, int dst, uint32_t bytes, uint64_t cookie = 0, PacketClient* client = nullptr) {
  Packet p;
  p.src = src;
  p.dst = dst;
  p.payload_bytes = bytes;
  p.kind = PacketKind::Write;
  p.cookie = cookie;
  p.client = client;
  return p;
}

TEST(PacketNetwork, OneFullPacketArrivesAfterSerialisationAndLatencies) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  ASSERT_TRUE(net.can_send(0, 128));
  net.send(write(0, 1, 128, 42));
  sim.run();
  ASSERT_EQ(rx.at.size(), 1u);
  // 9 flits x 16 B = 144 B at 50 GB/s per plane = 2880 ps on the GPU link, 250 ns to the
  // switch, 100 ns through it, 2880 ps on the switch link, 250 ns to the GPU.
  EXPECT_EQ(rx.at[0].ps(), 2880 + 250000 + 100000 + 2880 + 250000);
  EXPECT_EQ(rx.got[0].cookie, 42u);
  EXPECT_EQ(rx.got[0].payload_bytes, 128u);
}

// The end-of-run conservation check (run.check): a packet still in flight is named; once the
// fabric has drained, every packet was delivered, every slot freed, every credit returned.
TEST(PacketNetwork, ConservationCheckSeesAPacketInFlight) {
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  net.send(write(0, 1, 128));
  const std::vector<std::string> before = net.conservation_violations();
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(before[0], "1 packets injected, 0 delivered");
  sim.run();
  EXPECT_TRUE(net.conservation_violations().empty());
}

// One 128 B write from GPU 0 to GPU 1 with acks on (cookie 7): what its sender heard.
struct AckedWrite {
  std::vector<Time> ack_at;
  std::vector<uint64_t> cookies;
  std::vector<int> from;
  Time end;
  nlohmann::json stats;
};
AckedWrite one_acked_write(bool ack_awaited) {
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  AckRecorder client(sim);
  Packet p = write(0, 1, 128, 7, &client);
  p.ack_awaited = ack_awaited;
  net.send(std::move(p));
  sim.run();
  return {client.ack_at, client.cookies, client.from, sim.now(), net.stats()};
}

TEST(PacketNetwork, AckIsOneFlitPacketBackToTheSender) {
  const AckedWrite w = one_acked_write(true);
  ASSERT_EQ(w.ack_at.size(), 1u);
  // Data delivered at 605760 ps; the ack (1 flit = 320 ps per link) takes 320 + 250000 +
  // 100000 + 320 + 250000 = 600640 ps back.
  EXPECT_EQ(w.ack_at[0].ps(), 605760 + 600640);
  EXPECT_EQ(w.cookies[0], 7u);
  EXPECT_EQ(w.from[0], 1);
  EXPECT_EQ(w.stats["acks_delivered"], 1);
  EXPECT_EQ(w.stats["packets_delivered"], 2);
}

// An ack its sender does not wait for takes the same links, but is retired when the last switch
// puts it on the link to the sender: no delivery event, and on_ack is told then.
TEST(PacketNetwork, AnAckNobodyAwaitsIsRetiredWhenTheLastSwitchSendsIt) {
  const AckedWrite w = one_acked_write(false);
  ASSERT_EQ(w.ack_at.size(), 1u);
  // Data delivered at 605760 ps; the ack's GPU link (320 ps), 250 + 100 ns to the switch output.
  EXPECT_EQ(w.ack_at[0].ps(), 605760 + 320 + 350000);
  EXPECT_EQ(w.end.ps(), 605760 + 320 + 350000);  // nothing happens at its arrival
  EXPECT_EQ(w.stats["acks_delivered"], 1);
  EXPECT_EQ(w.stats["packets_delivered"], 2);
}

// A transfer that completes on delivery frees its id while its last write's ack is in flight;
// a put that completes on its acks and reuses the id must not count that stale ack.
TEST(PacketNetwork, AStaleAckDoesNotCompleteAPutThatReusedItsTransferId) {
  Simulator sim;
  NetConfig c = test::h800_like(2);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  uint64_t acks_at_put_end = 0;
  net.transfer(0, 1, 128, 0, [&] {
    thread_block_put(net, 0, 1, 3 * 128, 128, 0, [&] { acks_at_put_end = net.stats()["acks_delivered"]; });
  });
  sim.run();
  // The transfer's ack, then the put's three: the put ends with its own third ack.
  EXPECT_EQ(acks_at_put_end, 4u);
  EXPECT_EQ(net.stats()["acks_delivered"], 4);
}

TEST(PacketNetwork, HeaderWordsTravelWithThePacket) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  Packet p = write(0, 1, 4);
  p.header = 0x8000'1234'5678'9abcULL;
  p.byte_mask = 0xF0;
  net.send(std::move(p));
  sim.run();
  ASSERT_EQ(rx.got.size(), 1u);
  EXPECT_EQ(rx.got[0].header, 0x8000'1234'5678'9abcULL);
  EXPECT_EQ(rx.got[0].byte_mask, 0xF0u);
  // 4 B = 1 data flit + header: 32 B = 640 ps per link.
  EXPECT_EQ(rx.at[0].ps(), 640 + 250000 + 100000 + 640 + 250000);
}

TEST(PacketNetwork, SingleLinkSaturatesAtLinkRateTimesHeaderEfficiency) {
  Simulator sim;
  NetConfig c = test::h800_like(2, 1);
  c.gpu_bandwidth = Bandwidth::bytes_per_second(50'000'000'000ULL);  // one plane of 50 GB/s
  PacketNetwork net(c, sim);
  Time done;
  net.transfer(0, 1, 1 << 20, 0, [&] { done = sim.now(); });
  sim.run();
  // 8192 packets back to back on the GPU link (2880 ps each); the last one then needs
  // 250 + 100 ns, 2880 ps and 250 ns more.
  EXPECT_EQ(done.ps(), 8192LL * 2880 + 250000 + 100000 + 2880 + 250000);
  const auto s = net.stats();
  const auto& up = s["links"][0];
  EXPECT_EQ(up["from"], "gpu0");
  EXPECT_EQ(up["busy_ps"], 8192LL * 2880);
  EXPECT_EQ(up["bytes"], 8192ULL * 144);
  EXPECT_EQ(up["payload_bytes"], 1ULL << 20);
  EXPECT_EQ(up["stall_ps"], 0);  // 64 KiB of switch buffer covers the credit loop
  // Payload rate while streaming = 50 GB/s x 128/144.
  const double gbps = static_cast<double>(1 << 20) / (8192.0 * 2880e-12) / 1e9;
  EXPECT_NEAR(gbps, 50.0 * 128 / 144, 1e-9);
}

TEST(PacketNetwork, ASwitchOutputGrantsALinkLatencyAheadInOneEvent) {
  // The same 8192 back-to-back packets as above. Each costs an event where it leaves the GPU
  // and one where it arrives; the switch output decides every grant up to 250 ns (the link
  // latency) ahead, 86 packets of 2880 ps, in one event, so it adds about 8192 / 86 = 96.
  Simulator sim;
  NetConfig c = test::h800_like(2, 1);
  c.gpu_bandwidth = Bandwidth::bytes_per_second(50'000'000'000ULL);
  PacketNetwork net(c, sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  net.transfer(0, 1, 1 << 20, 0, [] {});
  const uint64_t events = sim.run();
  ASSERT_EQ(rx.at.size(), 8192u);
  // Arrival k: leaves the GPU at 2880 (k + 1), the switch 350 ns later and 2880 ps on, lands
  // 250 ns after that, as if each grant had its own event.
  for (size_t k = 0; k < 8192; k += 1000) EXPECT_EQ(rx.at[k].ps(), 2880LL * static_cast<int64_t>(k + 1) + 350000 + 2880 + 250000) << k;
  EXPECT_GE(events, 2u * 8192);
  EXPECT_LT(events, 2u * 8192 + 200);
}

// Every GPU sends to every other GPU transfers of uneven sizes at uneven times and priorities,
// with small buffers (credit stalls, head-of-line blocking) and receivers that refuse packets
// now and then: what each receiver got and when, and every link's counters.
// A delivery: when, and from which GPU.
using Delivery = std::pair<int64_t, int>;

struct Traffic {
  std::vector<std::vector<Delivery>> at;
  std::vector<Time> done;
  nlohmann::json stats;
  uint64_t events = 0;
};
Traffic uneven_all_to_all(bool lookahead) {
  struct Gate : PacketReceiver {
    Simulator& sim;
    PacketNetwork* net = nullptr;
    int gpu = 0;
    std::vector<Delivery> at;
    bool waiting = false;
    Gate(Simulator& s, int g) : sim(s), gpu(g) {}
    // Refuses during the first 40 ns of every 1.3 us (memory busy), then reopens.
    bool can_accept(const Packet&) override {
      const int64_t phase = sim.now().ps() % 1'300'000;
      if (phase >= 40'000) return true;
      if (!waiting) {
        waiting = true;
        sim.schedule_at(Time::from_ps(sim.now().ps() - phase + 40'000), [this] {
          waiting = false;
          net->resume_ingress(gpu);
        });
      }
      return false;
    }
    void deliver(Packet&& p) override { at.push_back(Delivery{sim.now().ps(), p.src}); }
  };
  Simulator sim;
  NetConfig c = test::h800_like(8);
  c.write_ack = false;  // see the test below
  c.switch_buffer_bytes = 1024;
  c.ingress_buffer_bytes = 768;
  PacketNetwork net(c, sim);
  net.set_grant_lookahead(lookahead);
  std::vector<std::unique_ptr<Gate>> gates;
  for (int g = 0; g < 8; ++g) {
    gates.push_back(std::make_unique<Gate>(sim, g));
    gates.back()->net = &net;
    net.set_receiver(g, gates.back().get());
  }
  Traffic t;
  t.done.resize(64);
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      const uint64_t bytes = 8000 + 3777ULL * static_cast<uint64_t>(s * 8 + d) % 40000;
      const Time start = Time::from_ps(static_cast<int64_t>(7919 * (s * 8 + d) % 50'000));
      const size_t k = static_cast<size_t>(s * 8 + d);
      sim.schedule_at(start, [&net, &sim, &t, s, d, bytes, k] {
        net.transfer(s, d, bytes, (s + d) % 3, [&sim, &t, k] { t.done[k] = sim.now(); });
      });
    }
  }
  t.events = sim.run();
  // Packets that reach a GPU in the same picosecond on different planes are delivered in the
  // order their events run, which is not what is compared here: sort them by source.
  for (auto& g : gates) {
    std::sort(g->at.begin(), g->at.end());
    t.at.push_back(g->at);
  }
  t.stats = net.stats();
  return t;
}

// "" if equal, else where the first difference lies (the vectors are long).
std::string first_difference(const std::vector<std::vector<Delivery>>& a, const std::vector<std::vector<Delivery>>& b) {
  for (size_t g = 0; g < a.size(); ++g) {
    for (size_t i = 0; i < std::min(a[g].size(), b[g].size()); ++i) {
      if (a[g][i] != b[g][i]) {
        return fmt::format("gpu {} delivery {}: {} ps from gpu {} vs {} ps from gpu {}", g, i, a[g][i].first,
                           a[g][i].second, b[g][i].first, b[g][i].second);
      }
    }
    if (a[g].size() != b[g].size()) return fmt::format("gpu {}: {} vs {} deliveries", g, a[g].size(), b[g].size());
  }
  return "";
}

// GPUs 1 and 2 start an incast to GPU 0 over one plane with buffers deep enough for a long
// backlog at the switch output; GPUs 3 to 7 join later, one every 100 ns. A newcomer's first
// packet is ready 350 ns after it left its GPU and takes its round-robin turns from then on,
// which an output granting further ahead than one link latency (250 ns) could miss.
std::vector<Delivery> incast_with_late_joiners(bool lookahead) {
  Simulator sim;
  NetConfig c = test::h800_like(8, 1);
  c.switch_buffer_bytes = 1 << 20;
  c.ingress_buffer_bytes = 1 << 20;
  PacketNetwork net(c, sim);
  net.set_grant_lookahead(lookahead);
  Recorder rx(sim);
  net.set_receiver(0, &rx);
  for (int g = 1; g < 8; ++g) {
    const Time start = g < 3 ? Time::zero() : Time::from_ps(2'000'000 + 100'000 * (g - 3) + 37 * g);
    sim.schedule_at(start, [&net, g] { net.transfer(g, 0, 256 * 1024, 0, [] {}); });
  }
  sim.run();
  std::vector<Delivery> got;
  for (size_t i = 0; i < rx.at.size(); ++i) got.emplace_back(rx.at[i].ps(), rx.got[i].src);
  return got;
}

// Without acks: with them, packets that reach one GPU on several planes in the same picosecond
// (outputs granting in step) queue their acks in the order their delivery events run, and that
// order is what granting ahead changes (it queues a delivery at the grant, not at its time).
TEST(PacketNetwork, GrantingAheadGivesTheGrantsOfOneEventPerGrant) {
  const Traffic ahead = uneven_all_to_all(true);
  const Traffic each = uneven_all_to_all(false);
  EXPECT_EQ(first_difference(ahead.at, each.at), "");
  EXPECT_EQ(ahead.done, each.done);
  EXPECT_TRUE(ahead.stats == each.stats);
  EXPECT_EQ(first_difference({incast_with_late_joiners(true)}, {incast_with_late_joiners(false)}), "");
  EXPECT_LT(ahead.events, each.events);
  // The pattern did stall on credits and on refusing receivers.
  int64_t stalled = 0;
  for (const auto& l : each.stats["links"]) stalled += l["stall_ps"].get<int64_t>();
  EXPECT_GT(stalled, 0);
}

TEST(PacketNetwork, SenderStallsWhenCreditsRunOut) {
  Simulator sim;
  NetConfig c = test::h800_like(2, 1);
  c.gpu_bandwidth = Bandwidth::bytes_per_second(50'000'000'000ULL);
  c.switch_buffer_bytes = 144;  // room for exactly one 128 B packet
  c.ingress_buffer_bytes = 144;
  PacketNetwork net(c, sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  Time done;
  net.transfer(0, 1, 10 * 128, 0, [&] { done = sim.now(); });
  sim.run();
  // Packet k may leave the GPU only when packet k-1's credit is back: it leaves the switch at
  // 2880 + 350000 + 2880 = 355760 after its own start and the credit crosses back in 250 ns,
  // so one packet every 605760 ps; each arrives 605760 ps after it starts.
  ASSERT_EQ(rx.at.size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(rx.at[static_cast<size_t>(k)].ps(), (k + 1) * 605760LL) << k;
  EXPECT_EQ(done.ps(), 10 * 605760LL);
  // The head waited from the end of each transmission to the credit's return.
  const auto s = net.stats();
  EXPECT_EQ(s["links"][0]["stall_ps"], 9 * (605760LL - 2880));
  EXPECT_EQ(s["links"][0]["peak_queue_flits"], 9);
}

// A receiver whose memory is busy until told otherwise.
struct SlowReceiver : PacketReceiver {
  Simulator& sim;
  bool open = false;
  std::vector<Time> at;
  explicit SlowReceiver(Simulator& s) : sim(s) {}
  bool can_accept(const Packet&) override { return open; }
  void deliver(Packet&&) override { at.push_back(sim.now()); }
};

TEST(PacketNetwork, ReceiverBackPressureHoldsPacketsInTheIngressBuffer) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  SlowReceiver rx(sim);
  net.set_receiver(1, &rx);
  net.send(write(0, 1, 128));
  sim.schedule_at(Time::from_us(5), [&] {
    rx.open = true;
    net.resume_ingress(1);
  });
  sim.run();
  ASSERT_EQ(rx.at.size(), 1u);
  EXPECT_EQ(rx.at[0], Time::from_us(5));
}

TEST(PacketNetwork, InjectionRefusedWhenEgressFullAndRoomIsSignalled) {
  Simulator sim;
  NetConfig c = test::h800_like(2, 1);
  c.egress_buffer_bytes = 2 * 144;
  PacketNetwork net(c, sim);
  struct Listener : RoomListener {
    int calls = 0;
    void on_room(int) override { ++calls; }
  } listener;
  // The first packet leaves at once for the idle link; two more fill the FIFO.
  net.send(write(0, 1, 128));
  net.send(write(0, 1, 128));
  net.send(write(0, 1, 128));
  EXPECT_FALSE(net.can_send(0, 128));
  EXPECT_TRUE(net.can_send(0, 0, PacketKind::Ack));  // the response class has its own room
  EXPECT_THROW(net.send(write(0, 1, 128)), std::logic_error);
  net.request_room(0, &listener);
  // One plane of 200 GB/s: 144 B take 720 ps.
  sim.run_until(Time::from_ps(719));
  EXPECT_EQ(listener.calls, 0);
  sim.run_until(Time::from_ps(720));  // the link frees, the second packet leaves the FIFO
  EXPECT_EQ(listener.calls, 1);
  EXPECT_TRUE(net.can_send(0, 128));
  sim.run();
  EXPECT_EQ(listener.calls, 1);  // once per request
}

// Seven GPUs send to GPU 0 at once.
std::vector<Time> incast(PacketNetwork& net, Simulator& sim, uint64_t bytes) {
  std::vector<Time> done(8);
  for (int g = 1; g < 8; ++g) net.transfer(g, 0, bytes, 0, [&done, &sim, g] { done[static_cast<size_t>(g)] = sim.now(); });
  sim.run();
  return done;
}

TEST(PacketNetwork, IncastGivesEachOfSevenSendersASeventhOfTheLink) {
  Simulator sim;
  NetConfig c = test::h800_like(8);
  c.write_ack = true;
  PacketNetwork net(c, sim);
  const uint64_t bytes = 256 * 1024;
  const std::vector<Time> done = incast(net, sim, bytes);
  // GPU 0's links carry 7 x 256 KiB x 144/128 of wire bytes at 200 GB/s: 10.32 us, plus the
  // pipeline latency; each sender gets 1/7 of 177.8 GB/s of payload rate.
  const double ideal_s = 7.0 * bytes * 144 / 128 / 200e9;
  for (int g = 1; g < 8; ++g) {
    const double t = done[static_cast<size_t>(g)].seconds();
    EXPECT_GT(t, ideal_s) << g;
    EXPECT_LT(t, ideal_s * 1.08) << g;
    const double share = static_cast<double>(bytes) / t / 1e9;
    EXPECT_NEAR(share, 200.0 * 128 / 144 / 7, 200.0 * 128 / 144 / 7 * 0.08) << g;
  }
}

TEST(PacketNetwork, IncastBackPressureDelaysTheSendersOtherTraffic) {
  // GPU 1 sends 1 MiB to GPU 2, alone and then while it and six others also send 1 MiB each
  // to GPU 0.
  const auto to_gpu2 = [](bool with_incast) {
    Simulator sim;
    PacketNetwork net(test::h800_like(8), sim);
    Time done;
    if (with_incast) {
      for (int g = 1; g < 8; ++g) net.transfer(g, 0, 1 << 20, 0, [] {});
    }
    net.transfer(1, 2, 1 << 20, 0, [&] { done = sim.now(); });
    sim.run();
    return done;
  };
  const Time alone = to_gpu2(false);
  const Time shared = to_gpu2(true);
  // Alone: 8192 packets over 4 planes at 200 GB/s = 5898.24 ns, then the last packet's
  // 2880 ps + 600 ns.
  EXPECT_EQ(alone.ps(), 5898240 + 2880 + 600000);
  // GPU 2's links are idle in both runs. Once the switch buffers hold GPU 1's packets for the
  // congested GPU 0, the head of GPU 1's shared egress FIFO waits for credits and the packets
  // for GPU 2 behind it wait too: GPU 1 advances at about twice its 1/7 share of GPU 0.
  EXPECT_GT(shared.ps(), 3 * alone.ps());
}

TEST(PacketNetwork, PriorityWinsSwitchOutputArbitration) {
  // GPUs 1 and 2 each send one packet to GPU 0 arriving at the same switch output at once:
  // the higher priority one is forwarded first, whichever input the round robin favours.
  for (int high = 1; high <= 2; ++high) {
    Simulator sim;
    PacketNetwork net(test::h800_like(3), sim);
    Recorder rx(sim);
    net.set_receiver(0, &rx);
    Packet a = write(1, 0, 128, 1);
    Packet b = write(2, 0, 128, 2);
    (high == 1 ? a : b).priority = 5;
    net.send(std::move(a));
    net.send(std::move(b));
    sim.run();
    ASSERT_EQ(rx.got.size(), 2u);
    EXPECT_EQ(rx.got[0].cookie, static_cast<uint64_t>(high));
    EXPECT_EQ(rx.at[1].ps() - rx.at[0].ps(), 2880);
  }
}

TEST(PacketNetwork, ConsecutivePacketsToOneDestinationSpreadOverThePlanes) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2), sim);
  for (int k = 0; k < 8; ++k) net.send(write(0, 1, 128));
  sim.run();
  const auto s = net.stats();
  for (int p = 0; p < 4; ++p) EXPECT_EQ(s["links"][p]["packets"], 2) << p;  // gpu0 -> sw0..sw3
}

TEST(PacketNetwork, InterleavedDestinationsStillUseEveryPlane) {
  // GPU 0 alternates between GPUs 1 and 2 (as a scheduler that polls its peers round-robin
  // does). Each destination's rotation starts at plane 0, but the FIFO head takes the next idle
  // plane instead of waiting for plane 0: the 8 packets leave in two waves of four, 2880 ps
  // apart, exactly as 8 packets to one destination do; the last arrives at
  // 2 x 2880 + 250000 + 100000 + 2880 + 250000 = 608640 ps.
  Simulator sim;
  PacketNetwork net(test::h800_like(3), sim);
  Recorder rx1(sim), rx2(sim);
  net.set_receiver(1, &rx1);
  net.set_receiver(2, &rx2);
  for (int k = 0; k < 8; ++k) net.send(write(0, 1 + k % 2, 128));
  sim.run();
  ASSERT_EQ(rx1.at.size(), 4u);
  ASSERT_EQ(rx2.at.size(), 4u);
  EXPECT_EQ(std::max(rx1.at.back(), rx2.at.back()).ps(), 608640);
  const auto s = net.stats();
  for (int p = 0; p < 4; ++p) EXPECT_EQ(s["links"][p]["packets"], 2) << p;  // gpu0 -> sw0..sw3
  EXPECT_EQ(s["links"][0]["stall_ps"], 0);
}

TEST(PacketNetwork, AStallEndsWhenTheHeadLeavesOnAnotherPlane) {
  // 2 planes of 100 GB/s, switch buffers of one 144 B packet. GPU 0 sends 3 packets to GPU 1:
  // two leave at 0 (one per plane, 1440 ps each); from 1440 ps both planes are idle without
  // credits. The credits come back when the switch has forwarded the packets and the credit
  // crossed the link: 1440 + 250000 + 100000 + 1440 + 250000 = 602880 ps. The third packet then
  // leaves on plane 0, and both stalls end: 601440 ps each. Two more packets at 10 us find
  // credits on both planes and stall nothing.
  Simulator sim;
  NetConfig c = test::h800_like(3, 2);
  c.switch_buffer_bytes = 144;
  PacketNetwork net(c, sim);
  Recorder rx(sim);
  net.set_receiver(1, &rx);
  for (int k = 0; k < 3; ++k) net.send(write(0, 1, 128));
  sim.schedule_at(Time::from_us(10), [&] {
    net.send(write(0, 1, 128));
    net.send(write(0, 1, 128));
  });
  sim.run();
  ASSERT_EQ(rx.at.size(), 5u);
  const auto s = net.stats();
  EXPECT_EQ(s["links"][0]["stall_ps"], 601440);  // gpu0 -> sw0
  EXPECT_EQ(s["links"][1]["stall_ps"], 601440);  // gpu0 -> sw1
}

// stream_sent: the hand-over is when the last packet enters the egress FIFO. One 200 GB/s
// plane, 8 KiB FIFO (512 flits), 128 B packets of 9 flits (720 ps): at 0 packet 0 goes on the
// link and packets 1-56 fill the FIFO (504 flits); then one enters each time one leaves, every
// 720 ps, so packet 127 (of 16 KiB) enters at 71 x 720. It leaves at 127 x 720 and lands
// 601440 later (acks off: the stream completes then).
TEST(PacketNetwork, StreamIsHandedOverWhenItsLastPacketEntersTheFifo) {
  Simulator sim;
  PacketNetwork net(test::h800_like(2, 1), sim);
  Time sent;
  Time done;
  net.stream_sent(0, 1, 16 * 1024, 0, StreamOptions{}, [&] { sent = sim.now(); }, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(sent.ps(), 71 * 720);
  EXPECT_EQ(done.ps(), 127 * 720 + 601440);
  // A stream that fits the FIFO is handed over at once.
  Time small = Time::max();
  net.stream_sent(0, 1, 1024, 0, StreamOptions{}, [&] { small = sim.now(); }, [] {});
  EXPECT_EQ(small, sim.now());
  sim.run();
}

}  // namespace
}  // namespace moehub
