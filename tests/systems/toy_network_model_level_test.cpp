// The network seam: a network the simulator does not ship, written here against the Network
// interface alone, carries every system's layer without a change to any system.
// Model-level tests (numbers: timing, counts, statistics) split from toy_network_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

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

// The same system on the shipped fabric and on the toy takes different times: the layer is
// timed by whichever network is under it. (Mixtral at 1024 tokens: the verify shapes are so
// small that Megatron-TE's layer is bound by its host, whatever the network.)
TEST(ToyNetwork, TheLayerTimeDependsOnTheNetworkUnderIt) {
  const std::vector<std::string> tokens = {"run.tokens=1024"};
  test::SystemRun fabric("megatron-te", tokens, false, test::ConfigBase::Defaults);
  fabric.run();
  test::SystemRun toy("megatron-te", tokens, false, test::ConfigBase::Defaults, kToy);
  toy.run();
  EXPECT_GT(toy_of(*toy.cluster)->transfers(), 0u);
  EXPECT_NE(toy.layer(), fabric.layer());
}

}  // namespace
}  // namespace moehub
