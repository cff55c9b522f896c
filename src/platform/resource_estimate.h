#pragma once
// What a run will need, estimated from the resolved configuration before the workload is built
// or anything simulated (issue 22): memory (the routed workload, each system's per-row state,
// functional buffers) against run.memory_budget, and a lower bound on the layer's simulated
// time (its expert GEMMs at peak tensor throughput on every GPU) against run.time_limit. A run
// that cannot fit either is refused with the one-line error naming the parameter and the limit,
// instead of growing until the machine swaps or simulating until the limit.

#include <cstdint>

#include <vector>

#include "config/config.h"
#include "moe/model_shape.h"
#include "net/collectives.h"
#include "platform/moe_system.h"

namespace moehub {

struct ResourceEstimate {
  uint64_t memory_bytes = 0;
  uint64_t budget_bytes = 0;
  double min_layer_seconds = 0;  // lower bound of the simulated layer time
};

// The most flow messages NCCL point-to-point transfers can have in flight at once (for a
// system's SystemEntry::flow_messages_bound): `pairs` transfers between distinct GPUs (each an
// AllToAll::start_pair of an NcclGroupCall, over all the calls that may overlap) carrying at
// most `bytes` in all. A transfer of b bytes runs k <= min(channels_per_peer, ceil(b / (chunk /
// 8))) connections (nccl_pair_channels); each connection's steps go one message at a time (the
// chunk, or with PXN its one leg, then the tail store, then the head store that frees the slot)
// and at most `steps` at once, so it has at most min(steps, ceil(share / chunk)) messages out and
// the transfer at most sum ceil(share / chunk) <= b / chunk + k <= 1 + b / chunk + b / (chunk /
// 8). Summed: pairs + bytes / chunk + bytes / (chunk / 8), and never more than every pair's
// connections full (pairs x channels_per_peer x steps). Assumes nothing about which pairs a
// rank's kernel works on at a time: every pair of a call may be in flight at once.
uint64_t nccl_messages_bound(const NcclConfig& cfg, long double pairs, long double bytes);

// What one NCCL point-to-point pair of a group call holds for the call's lifetime (heaptrack of
// fastermoe at 256 GPUs x 64 tokens per GPU, main at 5a96001: its AllToAll 208 B
// (NcclGroupCall::start_pair, 37.19 MB over 178798), its connection 72 B (AllToAll::add_pair,
// 13.33 MB over 185150), the call's pair and visit tables 39 B (7.61 MB over 195840 pairs), the
// FIFO flags' allocation 32 B): 351 B, rounded up. Counted for every pair of every call, started
// or not.
constexpr uint64_t kNcclPairBytes = 400;
// What one enqueued kernel holds (Gpu::create_kernel, the same heaptrack: 184.71 MB over 449190
// kernels, 411 B), rounded up; the GPU keeps a kernel until it completes (then only its times),
// so a system that enqueues its whole layer up front holds every kernel at its start.
constexpr uint64_t kKernelBytes = 416;

// `concurrent`: systems simulated at the same time (each holds its own per-row state; the
// costliest of `systems` stands for each).
ResourceEstimate estimate_resources(const Config& config, const ModelShape& model,
                                    const std::vector<const SystemEntry*>& systems, unsigned concurrent);
// Throws UserError (run.memory_budget or run.time_limit) if the run cannot fit.
void check_resources(const Config& config, const ModelShape& model, const std::vector<const SystemEntry*>& systems,
                     unsigned concurrent);

}  // namespace moehub
