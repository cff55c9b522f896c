// Streams, events between them, and the host: issue costs, launch gaps, host syncs.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/host.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;

KernelSpec busy(std::string name, Time d) {
  KernelSpec k;
  k.name = std::move(name);
  k.blocks = 1;
  k.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::compute(d)});
  return k;
}

TEST(Stream, KernelsInOneStreamRunInOrderWithALaunchGapEach) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Stream& s = gpu.create_stream("s");
  const KernelId a = s.launch(busy("a", Time::from_us(10)));
  const KernelId b = s.launch(busy("b", Time::from_us(10)));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(a).started->ps(), 1500000);
  EXPECT_EQ(gpu.kernel_times(b).started->ps(), 11500000 + 1500000);
  EXPECT_EQ(gpu.kernel_times(b).ended->ps(), 23000000);
}

TEST(Stream, EventOrdersWorkAcrossStreams) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Stream& s1 = gpu.create_stream("1");
  Stream& s2 = gpu.create_stream("2");
  const EventId e = gpu.create_event("produced");
  s2.wait(e);
  const KernelId consumer = s2.launch(busy("consumer", Time::from_us(5)));
  s1.launch(busy("producer", Time::from_us(10)));
  s1.record(e);
  sim.run();
  // producer 1.5 -> 11.5 us; the wait ends 1 us later; the consumer starts after its gap.
  EXPECT_EQ(gpu.kernel_times(consumer).started->ps(), 11500000 + 1000000 + 1500000);
  EXPECT_EQ(gpu.kernel_times(consumer).ended->ps(), 19000000);
}

TEST(Stream, OneShotEventsCannotBeRecordedTwice) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Stream& s = gpu.create_stream("s");
  const EventId e = gpu.create_event("e");
  s.record(e);
  EXPECT_THROW(s.record(e), std::logic_error);
}

TEST(Host, BackToBackLaunchesHideTheirCostBehindRunningKernels) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Host host(sim, testing::host());
  Stream& s = gpu.create_stream("s");
  const KernelId k1 = host.launch(s, busy("k1", Time::from_us(10)));
  const KernelId k2 = host.launch(s, busy("k2", Time::from_us(10)));
  sim.run();
  // k1: issued 0 -> 3 us, starts 4.5 us, ends 14.5 us. k2 is issued 3 -> 6 us, long before
  // k1 ends, so only the GPU's launch gap separates them.
  EXPECT_EQ(gpu.kernel_times(k1).ended->ps(), 14500000);
  EXPECT_EQ(gpu.kernel_times(k2).started->ps(), 14500000 + 1500000);
}

TEST(Host, ASyncExposesTheLaunchLatencyOfTheNextKernel) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Host host(sim, testing::host());
  Stream& s = gpu.create_stream("s");
  const KernelId k1 = host.launch(s, busy("k1", Time::from_us(10)));
  bool counts_seen = false;
  host.sync(s, 4, Time::from_us(2), [&] { counts_seen = true; });
  const KernelId k2 = host.launch(s, busy("k2", Time::from_us(10)));
  sim.run();
  EXPECT_TRUE(counts_seen);
  // k1 ends at 14.5 us. The copy (issued 3 -> 6 us) runs 14.5 us -> + 5 us + 4 B at 64 GB/s
  // (63 ps) = 19.500063 us; the host wakes 5 us later, works 2 us (26.500063 us), issues k2
  // (3 us), and the GPU starts it after its launch gap: 31.000063 us. The gap between the
  // kernels is 16.500063 us instead of 1.5 us.
  EXPECT_EQ(gpu.kernel_times(k1).ended->ps(), 14500000);
  EXPECT_EQ(gpu.kernel_times(k2).started->ps(), 31000063);
  EXPECT_EQ(host.busy_time().ps(), 3000000 * 3 + 5000000 + 2000000);
}

TEST(Host, CallbacksAfterASyncCanLaunchWorkSizedByTheCopy) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Host host(sim, testing::host());
  Stream& s = gpu.create_stream("s");
  host.launch(s, busy("count", Time::from_us(1)));
  KernelId later = 0;
  host.sync(s, 0, Time::zero(), [&] { later = host.launch(s, busy("sized", Time::from_us(1))); });
  sim.run();
  // count 4.5 -> 5.5 us; the copy is issued 3 -> 6 us and runs 6 -> 11 us; wake 16 us; the
  // launch appended by the callback is issued 16 -> 19 us and starts after the gap: 20.5 us.
  EXPECT_EQ(gpu.kernel_times(later).started->ps(), 20500000);
}

}  // namespace
}  // namespace moehub::gpu
