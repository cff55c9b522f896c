// Memory-bound kernels and arriving network writes share the GPU's memory bandwidth.

#include "gpu/memory_kernel.h"

#include <gtest/gtest.h>

#include "gpu/gpu.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;
using testing::kLaunchGapPs;

TEST(MemoryKernel, TimeIsBytesOverTheAchievableBandwidth) {
  Simulator sim;
  Gpu gpu(sim, h800());
  // 1024-thread blocks: 2 per SM, 264 in the wave, 1e6 B each.
  const KernelId id = gpu.create_stream("s").launch(memory_kernel(gpu, "permute", 264000000, {1024, 0, 0, 0}));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).blocks, 264u);
  // ceil(264e6 B x 1e12 / 2.9145e12 B/s) = 90581575 ps.
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + 90581575);
}

TEST(MemoryKernel, ArrivingWritesTakeTheirShare) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const KernelId id = gpu.create_stream("s").launch(memory_kernel(gpu, "scale", 264000000, {1024, 0, 0, 0}));
  Time written;
  // A network write of 1e6 B arrives with the kernel and competes as a 265th request.
  sim.schedule_at(Time::from_ps(kLaunchGapPs), [&] { gpu.memory_write(1000000, [&] { written = sim.now(); }); });
  sim.run();
  // All 265 equal requests progress together and end together.
  const Time together = h800().hbm_achievable().transfer_time(265000000);
  EXPECT_EQ(written.ps(), kLaunchGapPs + together.ps());
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), kLaunchGapPs + together.ps());
}

TEST(MemoryKernel, ADependentReadWaitsForItsBytesThenTheDramLatency) {
  Simulator sim;
  Gpu gpu(sim, h800());
  Time read;
  gpu.dependent_read(8, [&] { read = sim.now(); });
  sim.run();
  // 8 B alone on HBM, then 421 ns of load-to-use latency.
  EXPECT_EQ(read.ps(), h800().hbm_achievable().transfer_time(8).ps() + 421000);
}

TEST(MemoryKernel, UnevenBytesSplitToTheByte) {
  Simulator sim;
  Gpu gpu(sim, h800());
  const KernelId id = gpu.create_stream("s").launch(memory_kernel(gpu, "odd", 1000, {2048, 0, 0, 0}, {0, 3}));
  sim.run();
  EXPECT_EQ(gpu.kernel_times(id).blocks, 3u);
  EXPECT_EQ(gpu.memory().bytes_served(), 1000u);
}

TEST(MemoryKernel, ByteCountsOfTheNamedKernels) {
  EXPECT_EQ(memory_bytes::permute(10, 4096, 2, 4), 2u * 10 * 4096 * 2 + 40);
  EXPECT_EQ(memory_bytes::activation(10, 100, true, 2), 3u * 10 * 100 * 2);
  EXPECT_EQ(memory_bytes::activation(10, 100, false, 2), 2u * 10 * 100 * 2);
  EXPECT_EQ(memory_bytes::scaling(8, 2, 64, 2, 4), 8u * 2 * 64 * 2 + 8 * 2 * 4 + 8 * 64 * 2);
  EXPECT_EQ(memory_bytes::routing(8, 16, 2, 4, 4, 8), 8u * 16 * 4 + 8 * 2 * 12);
}

}  // namespace
}  // namespace moehub::gpu
