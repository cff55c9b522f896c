// Stores to peers: issued at the SM's load/store rate, handed to the StorePort, which may
// push back.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/store_port.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;

// Accepts stores while open; while closed, refuses and keeps the retry for reopen().
class FakePort final : public StorePort {
 public:
  explicit FakePort(Simulator& sim) : sim_(sim) {}
  bool try_store(const StoreRequest& s, Callback retry) override {
    if (!open_) {
      retries_.push_back(std::move(retry));
      return false;
    }
    accepted.push_back({sim_.now().ps(), s});
    return true;
  }
  void close() { open_ = false; }
  void reopen() {
    open_ = true;
    std::vector<Callback> r;
    r.swap(retries_);
    for (auto& fn : r) fn();
  }
  struct Accepted {
    int64_t at_ps;
    StoreRequest store;
  };
  std::vector<Accepted> accepted;

 private:
  Simulator& sim_;
  bool open_ = true;
  std::vector<Callback> retries_;
};

KernelSpec storer(uint32_t blocks, SmRange sms) {
  KernelSpec k;
  k.name = "dispatch";
  k.blocks = blocks;
  k.sms = sms;
  // 6336 B at 32 B/clk x 1.98 GHz = 63.36e9 B/s take exactly 100 ns to issue.
  k.program = std::make_shared<FunctionProgram>([](BlockState& b) {
    return b.step == 0 ? Step::store(3, 6336, 100 + b.block) : Step::done();
  });
  return k;
}

TEST(StorePort, StoresLeaveAtTheSmLoadStoreRate) {
  Simulator sim;
  Gpu gpu(sim, h800(), 1);
  FakePort port(sim);
  gpu.set_store_port(&port);
  gpu.create_stream("s").launch(storer(2, {5, 1}));  // two blocks on SM 5 share its LSU
  sim.run();
  ASSERT_EQ(port.accepted.size(), 2u);
  EXPECT_EQ(port.accepted[0].at_ps, 1500000 + 100000);
  EXPECT_EQ(port.accepted[1].at_ps, 1500000 + 200000);
  const StoreRequest& s = port.accepted[1].store;
  EXPECT_EQ(s.src_gpu, 1u);
  EXPECT_EQ(s.dst_gpu, 3u);
  EXPECT_EQ(s.bytes, 6336u);
  EXPECT_EQ(s.tag, 101u);
  EXPECT_EQ(s.sm, 5u);
  EXPECT_EQ(s.block, 1u);
  EXPECT_EQ(gpu.counters().store_bytes, uint64_t{2 * 6336});
}

TEST(StorePort, DifferentSmsIssueInParallel) {
  Simulator sim;
  Gpu gpu(sim, h800());
  FakePort port(sim);
  gpu.set_store_port(&port);
  KernelSpec k = storer(2, {0, 2});
  k.shape.max_blocks_per_sm = 1;
  gpu.create_stream("s").launch(std::move(k));
  sim.run();
  ASSERT_EQ(port.accepted.size(), 2u);
  EXPECT_EQ(port.accepted[0].at_ps, 1600000);
  EXPECT_EQ(port.accepted[1].at_ps, 1600000);
}

TEST(StorePort, BackPressureHoldsTheBlockUntilThePortRetries) {
  Simulator sim;
  Gpu gpu(sim, h800());
  FakePort port(sim);
  gpu.set_store_port(&port);
  port.close();
  const KernelId id = gpu.create_stream("s").launch(storer(1, {}));
  sim.schedule_at(Time::from_us(4), [&] { port.reopen(); });
  sim.run();
  ASSERT_EQ(port.accepted.size(), 1u);
  EXPECT_EQ(port.accepted[0].at_ps, 4000000);
  EXPECT_EQ(gpu.kernel_times(id).ended->ps(), 4000000);
  EXPECT_EQ(gpu.counters().store_refusals, uint64_t{1});
}

TEST(StorePort, StoreWithoutAPortIsALogicError) {
  Simulator sim;
  Gpu gpu(sim, h800());
  gpu.create_stream("s").launch(storer(1, {}));
  EXPECT_THROW(sim.run(), std::logic_error);
}

}  // namespace
}  // namespace moehub::gpu
