// Event-core throughput: events executed per second of wall time.
//   build/bench/moehub_bench_sim --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <vector>

#include "sim/rng.h"
#include "sim/simulator.h"

namespace moehub {
namespace {

// Two components bounce one message: every event schedules exactly one successor.
struct PingPong {
  Simulator& sim;
  int64_t remaining;
  void ping() {
    if (--remaining > 0) sim.schedule_in(Time::from_ns(1), [this] { pong(); });
  }
  void pong() {
    if (--remaining > 0) sim.schedule_in(Time::from_ns(1), [this] { ping(); });
  }
};

void BM_PingPong(benchmark::State& state) {
  const int64_t events = state.range(0);
  for (auto _ : state) {
    Simulator sim;
    PingPong p{sim, events};
    sim.schedule_at(Time::zero(), [&] { p.ping(); });
    sim.run();
    benchmark::DoNotOptimize(sim.events_executed());
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PingPong)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// A standing population of pending events, each rescheduling itself at a random delay: the
// heap holds `population` entries throughout, like a busy network of links and SMs.
struct RandomScheduler {
  Simulator& sim;
  Rng rng;
  int64_t remaining;
  void fire() {
    if (--remaining > 0) {
      sim.schedule_in(Time::from_ps(static_cast<int64_t>(1 + rng.below(100000))), [this] { fire(); },
                      static_cast<int32_t>(rng.below(4)));
    }
  }
};

void BM_RandomSchedule(benchmark::State& state) {
  const int64_t population = state.range(0);
  const int64_t events = 1 << 20;
  for (auto _ : state) {
    Simulator sim;
    RandomScheduler s{sim, Rng(1), events};
    for (int64_t i = 0; i < population; ++i) {
      sim.schedule_at(Time::from_ps(static_cast<int64_t>(s.rng.below(100000))), [&s] { s.fire(); });
    }
    sim.run();
    benchmark::DoNotOptimize(sim.events_executed());
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events + population) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RandomSchedule)->Arg(64)->Arg(4096)->Arg(65536)->Unit(benchmark::kMillisecond);

// Cancellation: half the scheduled timeouts are cancelled before they fire.
void BM_ScheduleCancel(benchmark::State& state) {
  const int64_t n = 1 << 18;
  for (auto _ : state) {
    Simulator sim;
    std::vector<EventHandle> handles;
    handles.reserve(n);
    for (int64_t i = 0; i < n; ++i) handles.push_back(sim.schedule_at(Time::from_ps(i), [] {}));
    for (int64_t i = 0; i < n; i += 2) sim.cancel(handles[i]);
    sim.run();
    benchmark::DoNotOptimize(sim.events_executed());
  }
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ScheduleCancel)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moehub

BENCHMARK_MAIN();
