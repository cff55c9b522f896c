// The thread-block dispatcher: occupancy, SM ranges, persistent grids, gates and releases.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu/gpu.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;
using testing::kLaunchGapPs;

std::shared_ptr<BlockProgram> compute_for(Time d) {
  return std::make_shared<StepListProgram>(std::vector<Step>{Step::compute(d)});
}

KernelSpec kernel(std::string name, uint32_t blocks, BlockShape shape, std::shared_ptr<BlockProgram> program) {
  KernelSpec k;
  k.name = std::move(name);
  k.blocks = blocks;
  k.shape = shape;
  k.program = std::move(program);
  return k;
}

TEST(Dispatch, OccupancyComesFromTheScarcestResource) {
  Simulator sim;
  Gpu gpu(sim, h800());
  EXPECT_EQ(gpu.blocks_per_sm({128, 0, 0, 0}), 16u);         // 2048 / 128 threads
  EXPECT_EQ(gpu.blocks_per_sm({32, 0, 0, 0}), 32u);          // block-slot limit
  EXPECT_EQ(gpu.blocks_per_sm({128, 100000, 0, 0}), 2u);     // 233472 B / 100000 B
  EXPECT_EQ(gpu.blocks_per_sm({256, 0, 128, 0}), 2u);        // 65536 / (256 x 128) registers
  EXPECT_EQ(gpu.blocks_per_sm({128, 0, 0, 3}), 3u);          // the kernel's own limit
  EXPECT_EQ(gpu.blocks_per_sm({1024, 240000, 0, 0}), 0u);    // does not fit
}

TEST(Dispatch, BlocksBeyondOneWaveWaitForASlot) {
  // 1024-thread blocks: two per SM, 264 per wave on 132 SMs.
  for (uint32_t blocks : {264u, 265u}) {
    Simulator sim;
    Gpu gpu(sim, h800());
    const KernelId id =
        gpu.create_stream("s").launch(kernel("k", blocks, {1024, 0, 0, 0}, compute_for(Time::from_us(10))));
    sim.run();
    const int64_t waves = blocks == 264 ? 1 : 2;
    EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + waves * 10000000) << blocks;
  }
}

TEST(Dispatch, KernelRestrictedToASubsetOfSms) {
  Simulator sim;
  Gpu gpu(sim, h800());
  KernelSpec k = kernel("comm", 8, {128, 0, 0, 1}, compute_for(Time::from_us(1)));
  k.sms = {128, 4};  // the last four SMs, one block each at a time
  const KernelId id = gpu.create_stream("s").launch(std::move(k));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + 2 * 1000000);
}

TEST(Dispatch, PersistentGridFillsItsSms) {
  Simulator sim;
  Gpu gpu(sim, h800());
  KernelSpec k;
  k.name = "persistent";
  k.persistent = true;
  k.shape = {512, 0, 0, 0};  // 4 per SM
  k.sms = {0, 10};
  // Each block loops three times over (compute 1 us).
  k.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::compute(Time::from_us(1))}, 3);
  const KernelId id = gpu.create_stream("s").launch(std::move(k));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).blocks, 40u);
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + 3000000);
  EXPECT_EQ(gpu.counters().blocks_run, 40u);
}

TEST(Dispatch, ConcurrentKernelsShareTheSms) {
  // Two streams: the first kernel's 132 blocks of 2048 threads fill the GPU; the second
  // kernel's block waits for an SM.
  Simulator sim;
  Gpu gpu(sim, h800());
  gpu.create_stream("a").launch(kernel("big", 132, {1024, 0, 0, 1}, compute_for(Time::from_us(10))));
  const KernelId small =
      gpu.create_stream("b").launch(kernel("small", 1, {1024, 0, 0, 0}, compute_for(Time::from_us(1))));
  sim.run();
  // "big" takes one block per SM (its own limit), leaving 1024 threads free: "small" runs at once.
  EXPECT_EQ(gpu.kernel_times(small).ended->ps(), kLaunchGapPs + 1000000);

  Simulator sim2;
  Gpu gpu2(sim2, h800());
  gpu2.create_stream("a").launch(kernel("big", 132, {1024, 0, 0, 0}, compute_for(Time::from_us(10))));
  gpu2.create_stream("a2").launch(kernel("big2", 132, {1024, 0, 0, 0}, compute_for(Time::from_us(10))));
  const KernelId late =
      gpu2.create_stream("b").launch(kernel("small", 1, {1024, 0, 0, 0}, compute_for(Time::from_us(1))));
  sim2.run();
  EXPECT_EQ(gpu2.kernel_times(late).ended->ps(), kLaunchGapPs + 10000000 + 1000000);
}

TEST(Dispatch, GatedBlocksRunOnlyWhenReleasedAndRetiredOnesNever) {
  Simulator sim;
  Gpu gpu(sim, h800());
  KernelSpec k = kernel("gemm1", 4, {128, 0, 0, 0},
                        std::make_shared<StepListProgram>(
                            std::vector<Step>{Step::gate(), Step::compute(Time::from_us(1))}));
  const KernelId id = gpu.create_kernel(std::move(k));
  gpu.release(id, 0);  // before launch: remembered
  gpu.create_stream("s").launch(id);
  sim.schedule_at(Time::from_us(5), [&] { gpu.release(id, 2); });
  sim.schedule_at(Time::from_us(7), [&] {
    gpu.retire(id, 1);
    gpu.retire(id, 3);
  });
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), 7000000);  // block 2 ended at 6 us; retirements end the kernel
  EXPECT_EQ(gpu.counters().blocks_run, 2u);
  EXPECT_EQ(gpu.counters().blocks_retired, 2u);
}

// A completed kernel's state is freed (FasterMoE enqueues about 28 kernels per step and GPU up
// front); its times stay, a release is a no-op and a retire an error, as before.
TEST(Dispatch, ACompletedKernelKeepsOnlyItsTimes) {
  Simulator sim;
  Gpu gpu(sim, h800());
  auto program = std::make_shared<StepListProgram>(std::vector<Step>{Step::compute(Time::from_us(1))});
  const std::weak_ptr<BlockProgram> watch = program;
  // Zero-step blocks end while the dispatcher places them (inside its pass), the others later.
  auto empty = std::make_shared<StepListProgram>(std::vector<Step>{});
  const std::weak_ptr<BlockProgram> watch_empty = empty;
  Stream& s = gpu.create_stream("s");
  const KernelId id = s.launch(kernel("k", 3, {128, 0, 0, 0}, std::move(program)));
  const KernelId none = s.launch(kernel("empty", 2, {128, 0, 0, 0}, std::move(empty)));
  // A block parked in a hardware wait and retired: its signal fires after the kernel is gone.
  const SignalId flag = gpu.create_signal("flag");
  const KernelId parked = gpu.create_kernel(kernel(
      "parked", 2, {128, 0, 0, 0}, std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(flag, 1, WaitMode::Hardware)})));
  gpu.create_stream("t").launch(parked);
  sim.schedule_at(Time::from_us(3), [&] {
    gpu.retire(parked, 0);
    gpu.retire(parked, 1);
  });
  sim.schedule_at(Time::from_us(4), [&] { gpu.signal_add(flag, 1); });
  sim.run();
  EXPECT_TRUE(watch.expired());
  EXPECT_TRUE(watch_empty.expired());
  EXPECT_EQ(gpu.kernel_times(id).name, "k");
  EXPECT_EQ(gpu.kernel_times(id).blocks, 3u);
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + 1000000);
  EXPECT_EQ(gpu.kernel_times(none).ended->ps(), 2 * kLaunchGapPs + 1000000);
  EXPECT_EQ(gpu.kernel_times(parked).ended->ps(), 3000000);
  EXPECT_NO_THROW(gpu.release(id, 2));
  EXPECT_THROW(gpu.release(id, 3), std::logic_error);
  EXPECT_THROW(gpu.retire(id, 0), std::logic_error);
  EXPECT_EQ(gpu.counters().kernels, 3u);
  s.launch(id);
  EXPECT_THROW(sim.run(), std::logic_error);  // launched twice
}

TEST(Dispatch, HardwareWaitsReleaseInThresholdOrder) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const SignalId rows = gpu.create_signal("rows");
  std::vector<int64_t> ends(3);
  auto program = std::make_shared<FunctionProgram>([&, rows](BlockState& b) {
    if (b.step == 0) return Step::wait(rows, static_cast<int64_t>(b.block) + 1, WaitMode::Hardware);
    if (b.step == 1) return Step::compute(Time::from_ns(100));
    ends[b.block] = sim.now().ps();
    return Step::done();
  });
  const KernelId id = gpu.create_stream("s").launch(kernel("k", 3, {128, 0, 0, 0}, program));
  for (int i = 1; i <= 3; ++i) sim.schedule_at(Time::from_us(2 * i), [&, rows] { gpu.signal_add(rows, 1); });
  sim.run();
  EXPECT_EQ(ends, (std::vector<int64_t>{2100000, 4100000, 6100000}));
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), 6100000);
}

TEST(Dispatch, ReleasedBlocksGoAheadOfFreshOnes) {
  // One SM, one block at a time. Block 0 is gated; blocks 1-2 are not. Releasing block 0
  // while block 1 runs puts it ahead of block 2.
  GpuConfig cfg = h800();
  cfg.sm_count = 1;
  Simulator sim;
  Gpu gpu(sim, cfg);
  std::vector<uint32_t> order;
  auto program = std::make_shared<FunctionProgram>([&](BlockState& b) {
    if (b.step == 0 && b.block == 0) return Step::gate();
    if (b.step == (b.block == 0 ? 1u : 0u)) {
      order.push_back(b.block);
      return Step::compute(Time::from_us(1));
    }
    return Step::done();
  });
  const KernelId id = gpu.create_stream("s").launch(kernel("k", 3, {128, 0, 0, 1}, program));
  sim.schedule_at(Time::from_ns(2000), [&] { gpu.release(id, 0); });
  sim.run();
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 0, 2}));
}

TEST(Dispatch, MisuseIsALogicError) {
  Simulator sim;
  Gpu gpu(sim, h800());
  EXPECT_THROW(gpu.create_kernel(kernel("nothing", 1, {128, 0, 0, 0}, nullptr)), std::logic_error);
  EXPECT_THROW(gpu.create_kernel(kernel("huge", 1, {4096, 0, 0, 0}, compute_for(Time::zero()))), std::logic_error);
  KernelSpec k = kernel("range", 1, {128, 0, 0, 0}, compute_for(Time::zero()));
  k.sms = {130, 4};
  EXPECT_THROW(gpu.create_kernel(std::move(k)), std::logic_error);
  EXPECT_THROW(StepListProgram({Step::compute(Time::zero()), Step::gate()}), std::logic_error);
}

}  // namespace
}  // namespace moehub::gpu
