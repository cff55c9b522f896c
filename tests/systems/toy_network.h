#pragma once
// Shared by toy_network_test.cpp and toy_network_model_level_test.cpp.

#include "net/network.h"
#include "platform/cluster.h"
#include "sim/simulator.h"

namespace moehub::test {

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

inline ToyNetwork* toy_of(Cluster& c) { return dynamic_cast<ToyNetwork*>(&c.network()); }

inline const NetworkFactory kToy = [](const NetConfig& config, Simulator& sim, TraceRecorder*) {
  return std::make_unique<ToyNetwork>(config, sim);
};

}  // namespace moehub::test
