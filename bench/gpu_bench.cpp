// GPU-model throughput: simulated thread blocks per second of wall time.
//   build/bench/moehub_bench_gpu --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "gpu/gemm.h"
#include "gpu/gpu.h"
#include "sim/units.h"

namespace moehub::gpu {
namespace {

GpuConfig h800() {
  GpuConfig g;
  g.sm_count = 132;
  g.clock = parse_frequency("1.98GHz");
  g.hbm_bandwidth = parse_bandwidth("3.35TB/s");
  g.hbm_efficiency = 0.87;
  g.tensor_flops_per_clock = 4096;
  g.tensor_clock = parse_frequency("1.83GHz");
  g.gemm_efficiency = 0.70;
  g.gemm_threads_per_block = 384;
  g.max_blocks_per_sm = 32;
  g.max_threads_per_sm = 2048;
  g.shared_memory_per_sm = 233472;
  g.registers_per_sm = 65536;
  g.sm_store_bytes_per_clock = 32;
  g.launch_gap = Time::from_ns(1500);
  g.event_wait_latency = Time::from_ns(1000);
  g.poll_latency = Time::from_ns(150);
  g.poll_bytes = 32;
  return g;
}

// A Mixtral-like expert GEMM1 per GPU: `experts` experts of `rows` rows, 4096 -> 28672.
void BM_GroupedGemm(benchmark::State& state) {
  const auto experts = static_cast<size_t>(state.range(0));
  const auto rows = static_cast<uint64_t>(state.range(1));
  uint64_t blocks = 0, events = 0;
  for (auto _ : state) {
    Simulator sim;
    Gpu gpu(sim, h800());
    GemmModel m(gpu.config(), {std::vector<uint64_t>(experts, rows), 28672, 4096});
    gpu.create_stream("s").launch(m.kernel("gemm1"));
    sim.run();
    blocks += m.tiles();
    events += sim.events_executed();
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
  state.counters["events/block"] = static_cast<double>(events) / static_cast<double>(blocks);
}
BENCHMARK(BM_GroupedGemm)->Args({8, 1024})->Args({64, 256})->Unit(benchmark::kMillisecond);

// Many short blocks, several per SM: dispatcher and memory sharing dominate.
void BM_ShortBlocks(benchmark::State& state) {
  const auto grid = static_cast<uint32_t>(state.range(0));
  uint64_t blocks = 0;
  for (auto _ : state) {
    Simulator sim;
    Gpu gpu(sim, h800());
    KernelSpec k;
    k.name = "short";
    k.blocks = grid;
    k.shape = {256, 0, 0, 0};
    k.program = std::make_shared<StepListProgram>(
        std::vector<Step>{Step::memory(8192), Step::compute(Time::from_ns(200))});
    gpu.create_stream("s").launch(std::move(k));
    sim.run();
    blocks += grid;
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ShortBlocks)->Arg(100000)->Unit(benchmark::kMillisecond);

// Hardware-mode waiters released one by one by a signal (the DAM pattern).
void BM_HardwareReleases(benchmark::State& state) {
  const auto grid = static_cast<uint32_t>(state.range(0));
  uint64_t blocks = 0;
  for (auto _ : state) {
    Simulator sim;
    Gpu gpu(sim, h800());
    const SignalId rows = gpu.create_signal("rows");
    KernelSpec k;
    k.name = "gated";
    k.blocks = grid;
    k.shape = {384, 0, 0, 1};
    k.program = std::make_shared<FunctionProgram>([rows](BlockState& b) {
      if (b.step == 0) return Step::wait(rows, static_cast<int64_t>(b.block) + 1, WaitMode::Hardware);
      if (b.step == 1) return Step::compute(Time::from_us(2));
      return Step::done();
    });
    gpu.create_stream("s").launch(std::move(k));
    for (uint32_t i = 0; i < grid; ++i) {
      sim.schedule_at(Time::from_ns(2000 + 10 * i), [&gpu, rows] { gpu.signal_add(rows, 1); });
    }
    sim.run();
    blocks += grid;
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(blocks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HardwareReleases)->Arg(20000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moehub::gpu

BENCHMARK_MAIN();
