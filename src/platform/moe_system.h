#pragma once
// One MoE system (Megatron-TE, Tutel, MoE-Hub, ...): a program of kernels, transfers, host
// synchronisations and thread-block waits that it issues on the cluster's GPUs for one layer.
// Each system lives in its own source file and is listed once in system_registry.cpp.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/param_registry.h"
#include "platform/cluster.h"

namespace moehub {

class MoeSystem {
 public:
  virtual ~MoeSystem() = default;
  // Issues the layer on every GPU (host programs, kernels, transfers). Each GPU calls
  // cluster.layer_done(g) when its part is complete; the simulation then runs to the end.
  virtual void start(Cluster& cluster) = 0;
  // System-specific results for the report (e.g. dropped tokens, hub counters); null if none.
  virtual nlohmann::json stats(Cluster& cluster) { (void)cluster; return nullptr; }
  // After the run (with run.check, in debug builds and in the system tests): what the system's
  // own conservation laws say went wrong (e.g. MoE-Hub: every row placed once, every DAM group
  // signalled once); empty if nothing.
  virtual std::vector<std::string> conservation_violations(Cluster& cluster) const {
    (void)cluster;
    return {};
  }
  // Before the cluster is built: a system that picks replicas of redundant experts itself
  // (MoE-Hub's hub) returns the workload as it routes it; nullopt: the workload as built, with
  // the software systems' static replica map (moe/replication.h).
  virtual std::optional<Workload> own_workload(const Workload& workload) {
    (void)workload;
    return std::nullopt;
  }
  // Before anything is simulated (every chosen system is checked before the first runs):
  // throws UserError naming the parameter, and the size it would need, when this system's
  // hardware or tables cannot hold this workload.
  virtual void check(const Config& config, const Workload& workload) const {
    (void)config;
    (void)workload;
  }
};

struct SystemEntry {
  std::string name;
  std::string description;
  // Declares the system's own `systems.<name>.*` parameters (may be null).
  void (*declare_params)(ParamRegistry&) = nullptr;
  std::unique_ptr<MoeSystem> (*make)(const Config&) = nullptr;
  // Bytes this program keeps per routed row while simulating the system at packet fidelity
  // (peak RSS of single-system runs, 2026-12-05; platform/resource_estimate.cpp).
  uint32_t memory_per_row = 256;
  // Whether the program models EP+TP (parallel.tp > 1; moe/tp_layout.h); a system without it
  // refuses such a run before anything is simulated.
  bool tensor_parallel = false;
  // Without it, why: what the system's code does instead, cited (empty: not checked).
  std::string no_tp_path{};
  // With it, where the system's own parameters decide: the whole reason it refuses this
  // configuration's parallel.tp > 1 (empty: it runs it). Null: every parallel.tp runs.
  std::string (*tp_refusal)(const Config&) = nullptr;
  // Where the system's own code refuses this configuration at any parallel.tp (its kernels' node
  // limit, buffers sized by a parameter): {the parameter to change, the whole reason, worded after
  // "system '<name>'"}, or an empty reason: it runs. Checked before the memory estimate.
  // Null: none.
  std::pair<std::string, std::string> (*refusal)(const Config&) = nullptr;
  // At flow fidelity: the most messages the system can have accepted by the network and not yet
  // delivered at once, from its paths' own limits (send windows, NCCL's FIFO slots); nullopt
  // where nothing below a phase's messages bounds them (platform/resource_estimate.cpp). Null:
  // not checked, as nullopt.
  std::optional<uint64_t> (*flow_messages_bound)(const Config&) = nullptr;
  // Bytes the system's model holds that grow with the GPUs and its schedule, not with the rows
  // or the messages in flight (its NCCL calls' pairs, kernels enqueued up front), at either
  // fidelity (platform/resource_estimate.cpp). Null: none beyond the per-GPU term.
  uint64_t (*state_bytes)(const Config&) = nullptr;
};

}  // namespace moehub
