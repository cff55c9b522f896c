// The network seam: a network the simulator does not ship, written here against the Network
// interface alone, carries every system's layer without a change to any system.

#include <gtest/gtest.h>

#include "net/network.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

// Every GPU pair has a private wire of fixed latency and bandwidth: no contention, no packets.
// Messages (stores, hub packets, reads) travel as transfers (TransferNetwork).
class ToyNetwork final : public TransferNetwork {
 public:
  static constexpr Time kLatency = Time::from_ns(1000);
  static constexpr Bandwidth kBandwidth = Bandwidth::bytes_per_second(100'000'000'000);  // 100 GB/s

  ToyNetwork(const NetConfig& config, Simulator& sim) : TransferNetwork(sim, config.gpus), config_(config), sim_(sim) {}

  void transfer(int src, int dst, uint64_t bytes, int, Callback on_complete) override {
    if (src == dst || bytes == 0) {
      sim_.schedule_in(Time::zero(), std::move(on_complete));
      return;
    }
    ++transfers_;
    bytes_ += bytes;
    sim_.schedule_in(kLatency + kBandwidth.transfer_time(bytes), std::move(on_complete));
  }
  nlohmann::json stats() const override { return {{"transfers", transfers_}, {"bytes", bytes_}}; }
  const NetConfig& config() const override { return config_; }

  uint64_t transfers() const { return transfers_; }

 private:
  NetConfig config_;
  Simulator& sim_;
  uint64_t transfers_ = 0;
  uint64_t bytes_ = 0;
};

ToyNetwork* toy_of(Cluster& c) { return dynamic_cast<ToyNetwork*>(&c.network()); }

const NetworkFactory kToy = [](const NetConfig& config, Simulator& sim, TraceRecorder*) {
  return std::make_unique<ToyNetwork>(config, sim);
};

class ToyNetworkRuns : public ::testing::TestWithParam<const char*> {};

TEST_P(ToyNetworkRuns, SystemFinishesItsLayerAndReproducesTheReference) {
  test::SystemRun run(GetParam(), {}, /*with_functional=*/true, test::ConfigBase::Verify, kToy);
  run.run();
  ASSERT_NE(toy_of(*run.cluster), nullptr);
  // Every system but the ideal layer moves rows between GPUs, so they crossed the toy's wires.
  if (std::string(GetParam()) != "ideal") {
    EXPECT_GT(toy_of(*run.cluster)->transfers(), 0u);
  }
  EXPECT_GT(run.layer(), Time::zero());
  EXPECT_TRUE(run.functional->passed()) << run.functional->report().dump();
}

INSTANTIATE_TEST_SUITE_P(EverySystem, ToyNetworkRuns,
                         ::testing::Values("ideal", "megatron-te", "fastermoe", "tutel", "comet", "ccfuser", "deepep",
                                           "mh-base", "mh-pkt", "mh-dep", "moehub"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace moehub
