// Waiting on data: poll-mode waiters hold SM slots and load the flag; hardware-mode waiters
// are not resident until released.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu/gpu.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;

struct Outcome {
  int64_t waiters_end_ps;
  int64_t unrelated_end_ps;
  uint64_t polls;
  uint64_t hardware_waits;
  uint64_t poll_loads_avoided;
};

// 264 blocks of 1024 threads (every thread slot of every SM) wait for a signal set at 10 us;
// an unrelated 1-block kernel of 5 us is launched on another stream at the same time.
Outcome waiters_and_unrelated_kernel(WaitMode mode) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const SignalId ready = gpu.create_signal("ready");
  KernelSpec waiters;
  waiters.name = "consumer";
  waiters.blocks = 264;
  waiters.shape = {1024, 0, 0, 0};
  waiters.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(ready, 1, mode)});
  KernelSpec other;
  other.name = "unrelated";
  other.blocks = 1;
  other.shape = {128, 0, 0, 0};
  other.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::compute(Time::from_us(5))});
  const KernelId w = gpu.create_stream("comm").launch(std::move(waiters));
  const KernelId u = gpu.create_stream("compute").launch(std::move(other));
  sim.schedule_at(Time::from_us(10), [&] { gpu.signal_add(ready, 1); });
  sim.run();
  const GpuCounters& st = gpu.counters();
  return {gpu.kernel_times(w).ended->ps(), gpu.kernel_times(u).ended->ps(), st.polls, st.hardware_waits,
          st.poll_loads_avoided};
}

TEST(Wait, PollModeWaitersDelayAnUnrelatedKernel) {
  const Outcome o = waiters_and_unrelated_kernel(WaitMode::Poll);
  // Both kernels start at 1.5 us (launch gap); the waiters take every thread slot. Each poll
  // takes max(150 ns L2 round trip, 264 x 32 B through 2.9145e12 B/s = 2.9 ns) = 150 ns, so
  // polls complete at 1.5 + 0.15 k us; the first at or after 10 us is k = 57: 10.05 us. Only
  // then do SMs free up: the unrelated kernel runs 10.05 -> 15.05 us.
  EXPECT_EQ(o.waiters_end_ps, 10050000);
  EXPECT_EQ(o.unrelated_end_ps, 15050000);
  EXPECT_EQ(o.polls, 264u * 57u);
}

TEST(Wait, HardwareModeWaitersDoNot) {
  const Outcome o = waiters_and_unrelated_kernel(WaitMode::Hardware);
  // The waiters are parked off the SMs: the unrelated kernel runs 1.5 -> 6.5 us; the waiters
  // are released at exactly 10 us, when the signal is written.
  EXPECT_EQ(o.unrelated_end_ps, 6500000);
  EXPECT_EQ(o.waiters_end_ps, 10000000);
  EXPECT_EQ(o.polls, 0u);
  // Each block waited 1.5 -> 10 us off the SMs; polling every 150 ns it would have loaded its
  // flag floor(8.5 us / 150 ns) + 1 = 57 times: the 264 x 57 loads the poll-mode run issues.
  EXPECT_EQ(o.hardware_waits, 264u);
  EXPECT_EQ(o.poll_loads_avoided, 264u * 57u);
}

// gpu.poll_model: one block polls `flag` >= 2; the flag gets +1 at each of `adds` (us).
struct PollRun {
  int64_t end_ps;
  uint64_t polls;
  uint64_t bytes;
  uint64_t requests;
};
PollRun one_poller(GpuConfig::PollModel model, Time sleep, std::vector<int64_t> adds_ns) {
  GpuConfig cfg = h800();
  cfg.poll_model = model;
  cfg.poll_sleep = sleep;
  Simulator sim;
  Gpu gpu(sim, cfg);
  const SignalId flag = gpu.create_signal("flag");
  KernelSpec k;
  k.name = "poller";
  k.blocks = 1;
  k.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(flag, 2, WaitMode::Poll)});
  const KernelId id = gpu.create_stream("s").launch(std::move(k));
  for (const int64_t at : adds_ns) sim.schedule_at(Time::from_ns(at), [&] { gpu.signal_add(flag, 1); });
  sim.run();
  return {gpu.kernel_times(id).ended->ps(), gpu.counters().polls, gpu.memory().bytes_served(),
          gpu.memory().stats()["requests"].get<uint64_t>()};
}

TEST(Wait, PollsCostMemoryTrafficAndSleepStretchesTheInterval) {
  // Poll every 250 ns: polls complete at 1.5 + 0.15 + 0.25 j us; the flag reaches 2 at 3 us and
  // the first completion at or after it is j = 6: 3.15 us.
  const PollRun r = one_poller(GpuConfig::PollModel::Each, Time::from_ns(100), {2000, 3000});
  EXPECT_EQ(r.end_ps, 3150000);
  EXPECT_EQ(r.polls, uint64_t{7});
  EXPECT_EQ(r.bytes, 7u * 32u);
}

TEST(Wait, ParkedPollerWakesInTheFlightOfThePollThatSeesTheFlag) {
  // Polls every 150 ns; the first completes at 1.65 us (flag 0: the block parks). The flag
  // reaches 2 at 2.0 us, during the poll issued at 1.65 + 2 x 0.15 = 1.95 us, which completes
  // at 2.1 us: 3 polls after the first, charged 3 x 32 B at the wake.
  for (const auto model : {GpuConfig::PollModel::Each, GpuConfig::PollModel::Parked}) {
    const PollRun r = one_poller(model, Time::zero(), {1000, 2000});
    EXPECT_EQ(r.end_ps, 2100000);
    EXPECT_EQ(r.polls, 4u);
    EXPECT_EQ(r.bytes, 4u * 32u);
    EXPECT_EQ(r.requests, 4u);
  }
}

TEST(Wait, ParkedPollerSeesAWriteAtItsPollsCompletion) {
  // The flag reaches 2 at 1.95 us, the completion instant of the third poll (1.65 + 2 x 0.15);
  // the write was scheduled before that poll was issued, so the poll sees it.
  for (const auto model : {GpuConfig::PollModel::Each, GpuConfig::PollModel::Parked}) {
    const PollRun r = one_poller(model, Time::zero(), {1000, 1950});
    EXPECT_EQ(r.end_ps, 1950000);
    EXPECT_EQ(r.polls, 3u);
  }
}

TEST(Wait, ParkedPollerIssuesThePollAfterASleepForReal) {
  // Polls every 250 ns (100 ns of sleep); the first completes at 1.65 us and the block parks.
  // The flag reaches 2 at 3.0 us: the 5 polls issued at 1.75 + 0.25 j us (j = 0..4) completed
  // before it (charged 5 x 32 B at the wake); the next is issued at 3.0 us and completes at
  // 3.15 us, as in PollsCostMemoryTrafficAndSleepStretchesTheInterval.
  for (const auto model : {GpuConfig::PollModel::Each, GpuConfig::PollModel::Parked}) {
    const PollRun r = one_poller(model, Time::from_ns(100), {2000, 3000});
    EXPECT_EQ(r.end_ps, 3150000);
    EXPECT_EQ(r.polls, 7u);
    EXPECT_EQ(r.bytes, 7u * 32u);
    EXPECT_EQ(r.requests, 7u);
  }
  // A write during the sleep after the poll completing at 2.9 us (at 2.95 us) is seen by the
  // poll issued at 3.0 us: the same end, 7 polls.
  const PollRun r = one_poller(GpuConfig::PollModel::Parked, Time::from_ns(100), {2000, 2950});
  EXPECT_EQ(r.end_ps, 3150000);
  EXPECT_EQ(r.polls, 7u);
}

TEST(Wait, SignalAlreadySetStillCostsOnePoll) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const SignalId flag = gpu.create_signal("flag", 5);
  KernelSpec k;
  k.name = "poller";
  k.blocks = 1;
  k.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(flag, 5, WaitMode::Poll)});
  const KernelId id = gpu.create_stream("s").launch(std::move(k));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), 1500000 + 150000);
}

TEST(Wait, HardwareWaitInTheMiddleOfAProgramIsALogicError) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const SignalId flag = gpu.create_signal("flag");
  KernelSpec k;
  k.name = "bad";
  k.blocks = 1;
  k.program = std::make_shared<FunctionProgram>([flag](BlockState& b) {
    return b.step == 0 ? Step::compute(Time::zero()) : Step::wait(flag, 1, WaitMode::Hardware);
  });
  gpu.create_stream("s").launch(std::move(k));
  EXPECT_THROW(sim.run(), std::logic_error);
}

}  // namespace
}  // namespace moehub::gpu
