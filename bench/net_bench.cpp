// Packet-fidelity throughput: simulated packets (data and acks) per second of wall time.
//   build/bench/moehub_bench_net --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include "net/collectives.h"
#include "net/packet_network.h"

namespace moehub {
namespace {

// The DGX-H800 preset's network values (configs/hardware/dgx-h800.toml).
NetConfig h800(bool acks) {
  NetConfig c;
  c.gpus = 8;
  c.planes = 4;
  c.links_per_gpu = 8;
  c.switch_ports = 64;
  c.gpu_bandwidth = Bandwidth::bytes_per_second(200'000'000'000ULL);
  c.gpu_switch_latency = Time::from_ns(250);
  c.switch_latency = Time::zero();
  c.egress_buffer_bytes = 8 * 1024;
  c.switch_buffer_bytes = 32 * 1024;
  c.ingress_buffer_bytes = 32 * 1024;
  c.response_buffer_bytes = 32 * 1024;
  c.write_ack = acks;
  return c;
}

void report(benchmark::State& state, uint64_t packets, uint64_t data_packets, uint64_t events) {
  state.counters["packets_per_s"] = benchmark::Counter(static_cast<double>(packets), benchmark::Counter::kIsRate);
  state.counters["data_packets_per_s"] = benchmark::Counter(static_cast<double>(data_packets), benchmark::Counter::kIsRate);
  state.counters["events_per_packet"] = static_cast<double>(events) / static_cast<double>(packets);
}

// The 8-GPU NCCL-style all-to-all of range(0) MiB per GPU.
void BM_AllToAll(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0)) << 20;
  const bool acks = state.range(1) != 0;
  uint64_t packets = 0, data = 0, events = 0;
  for (auto _ : state) {
    Simulator sim;
    PacketNetwork net(h800(acks), sim);
    AllToAll a2a(net, sim, NcclConfig{});
    a2a.start(AllToAll::uniform(8, bytes), 0, [] {});
    sim.run();
    packets += net.packets_delivered();
    data += net.stats()["packets_delivered"].get<uint64_t>() - net.stats()["acks_delivered"].get<uint64_t>();
    events += sim.events_executed();
  }
  report(state, packets, data, events);
}
BENCHMARK(BM_AllToAll)->Args({2, 1})->Args({16, 1})->Args({16, 0})->Unit(benchmark::kMillisecond);

// Seven GPUs send range(0) MiB each to GPU 0: every buffer fills and credits gate every packet.
void BM_Incast(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0)) << 20;
  uint64_t packets = 0, data = 0, events = 0;
  for (auto _ : state) {
    Simulator sim;
    PacketNetwork net(h800(true), sim);
    for (int g = 1; g < 8; ++g) net.transfer(g, 0, bytes, 0, [] {});
    sim.run();
    packets += net.packets_delivered();
    data += net.stats()["packets_delivered"].get<uint64_t>() - net.stats()["acks_delivered"].get<uint64_t>();
    events += sim.events_executed();
  }
  report(state, packets, data, events);
}
BENCHMARK(BM_Incast)->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moehub
BENCHMARK_MAIN();
