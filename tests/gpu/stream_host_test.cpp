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

// The host-bound regime: N framework ops whose kernels are shorter than their host cost. Each
// op costs 5 us (framework) + 3 us (launch) of host time; a 2 us kernel finishes before the
// next one is issued, so the program takes N x 8 us plus the last kernel's gap and run time.
TEST(Host, FrameworkOpsWithShortKernelsTakeNTimesTheirHostCost) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Host host(sim, testing::host());
  Stream& s = gpu.create_stream("s");
  constexpr int kOps = 10;
  KernelId last = 0;
  for (int i = 0; i < kOps; ++i) {
    host.framework_op();
    last = host.launch(s, busy("small", Time::from_us(2)));
  }
  sim.run();
  EXPECT_EQ(gpu.kernel_times(last).started->ps(), kOps * 8000000 + 1500000);
  EXPECT_EQ(gpu.kernel_times(last).ended->ps(), kOps * 8000000 + 1500000 + 2000000);
  const HostOps o = host.ops();
  EXPECT_EQ(o.kernels, 10u);
  EXPECT_EQ(o.framework_ops, 10u);
  EXPECT_EQ(o.busy.ps(), kOps * 8000000);
}

// host.layer_lead: the host starts the layer already 20 us ahead, so the first 20 us of its
// 80 us program take no simulated time and every kernel starts 20 us earlier.
// A host with `lead` of host.layer_lead in front of one GPU stream.
struct LeadRig {
  explicit LeadRig(Time lead) : host(sim, with_lead(lead)) {}
  static HostConfig with_lead(Time lead) {
    HostConfig cfg = testing::host();
    cfg.layer_lead = lead;
    return cfg;
  }
  Simulator sim;
  Gpu gpu{sim, h800()};
  Host host;
  Stream& s = gpu.create_stream("s");
};

TEST(Host, ALayerLeadHidesThatMuchHostTime) {
  LeadRig r(Time::from_us(20));
  Host& host = r.host;
  Stream& s = r.s;
  constexpr int kOps = 10;
  KernelId first = 0, last = 0;
  for (int i = 0; i < kOps; ++i) {
    host.framework_op();
    last = host.launch(s, busy("small", Time::from_us(2)));
    if (i == 0) first = last;
  }
  r.sim.run();
  // The first op's 8 us are covered: its kernel is issued at 0 and starts after the launch gap.
  EXPECT_EQ(r.gpu.kernel_times(first).started->ps(), 1500000);
  EXPECT_EQ(r.gpu.kernel_times(last).started->ps(), kOps * 8000000 - 20000000 + 1500000);
  EXPECT_EQ(host.ops().busy.ps(), kOps * 8000000);  // the host still did all its work
}

// A sync blocks the host on the GPU: the lead left at that point is lost.
TEST(Host, ALayerLeadEndsAtTheFirstSync) {
  LeadRig r(Time::from_us(100));
  r.host.sync(r.s, 0, Time::zero());  // issue covered by the lead, then the copy (5 us) and wake-up (5 us)
  r.host.framework_op();              // 5 us, no lead left
  const KernelId k = r.host.launch(r.s, busy("k", Time::from_us(1)));  // 3 us
  r.sim.run();
  EXPECT_EQ(r.gpu.kernel_times(k).started->ps(), Time::from_us(5 + 5 + 5 + 3).ps() + 1500000);
}

TEST(Host, CountsWhatItIssues) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Host host(sim, testing::host());
  Stream& s = gpu.create_stream("s");
  Stream& side = gpu.create_stream("side");
  const EventId e = gpu.create_event("e");
  host.nccl_call();                              // 7 us
  host.launch(s, busy("k", Time::from_us(1)));   // 3 us
  host.record(s, e);                             // 3 us
  host.wait(side, e);                            // 3 us
  host.copy(side, "d2h", 64, true);              // 3 us
  host.copy(side, "h2d", 64, false);             // 3 us
  host.sync(s, 8, Time::zero());                 // 3 us issue + 5 us wake-up
  sim.run();
  const HostOps o = host.ops();
  EXPECT_EQ(o.kernels, 1u);
  EXPECT_EQ(o.nccl_calls, 1u);
  EXPECT_EQ(o.events, 2u);
  EXPECT_EQ(o.d2h_copies, 2u);  // the copy and the sync's copy
  EXPECT_EQ(o.h2d_copies, 1u);
  EXPECT_EQ(o.syncs, 1u);
  EXPECT_EQ(o.framework_ops, 0u);
  EXPECT_EQ(o.busy.ps(), Time::from_us(7 + 3 * 6 + 5).ps());
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
