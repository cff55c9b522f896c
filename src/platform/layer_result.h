#pragma once
// What one system's run of one layer measured: the typed form of an entry of `results[]` in
// `moehub run --format json` (to_json writes it, from_json reads it back from the figures'
// cache), and the list of its numeric fields that figures and tables may name.

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/host.h"
#include "platform/activity.h"
#include "sim/time.h"

namespace moehub {

// The non-MoE work of one layer that every system shares (attention; shared experts; the dense
// FFN of dense layers), from which a MoE layer time gives the end-to-end model time.
struct LayerFrame {
  Time attention;
  Time shared_experts;
  Time dense_ffn;
  int64_t layers = 0;
  int64_t moe_layers = 0;
  double e2e_ms(Time moe_layer) const;
  nlohmann::json to_json() const;
  static LayerFrame from_json(const nlohmann::json& j);
};

struct LayerResult {
  std::string system;
  Time layer;                               // until the last GPU finished
  double e2e_ms = 0;                        // the model, every layer, with this MoE layer
  std::array<Time, kActivityCount> breakdown{};  // the critical GPU's timeline by activity
  int critical_gpu = 0;
  std::optional<Time> routing_to_gemm1;     // Fig. 15's window, the longest over GPUs
  std::optional<double> dispatch_GBps;      // received bytes from peers over the dispatch, mean over GPUs
  std::optional<double> combine_GBps;
  // Runs across nodes: the same rates split by the peer's place, the receiver's node (NVLink)
  // or another node (RDMA), each over the whole phase, so the two parts add up to the total.
  std::optional<double> dispatch_nvlink_GBps, dispatch_rdma_GBps, combine_nvlink_GBps, combine_rdma_GBps;
  uint64_t events = 0;
  std::vector<gpu::HostOps> ops;            // per GPU, what its host issued
  nlohmann::json stats = nullptr;           // the system's own section (null if none)
  nlohmann::json network;                   // the network model's statistics
  nlohmann::json functional = nullptr;      // functional mode's check (null when off)
  std::optional<double> moehub_speedup;     // this layer time over MoE-Hub's (when both ran)
  std::optional<double> fraction_of_ideal;  // the ideal layer time over this one
  std::optional<LayerFrame> frame;

  nlohmann::json to_json() const;
  static LayerResult from_json(const nlohmann::json& j);
  // Fills moehub_speedup and fraction_of_ideal from MoE-Hub's and the ideal layer's runs of the
  // same configuration (either may be null: not run).
  void compare(const LayerResult* moehub, const LayerResult* ideal);
};

// A numeric field of a result that a figure or a table row may name (`field = "layer_us"`).
struct ResultField {
  std::string key;
  std::string unit;
  std::string what;
  std::function<std::optional<double>(const LayerResult&)> get;
};
const std::vector<ResultField>& result_fields();
const ResultField* find_result_field(std::string_view key);  // null if none has that key

}  // namespace moehub
