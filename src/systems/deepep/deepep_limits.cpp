// DeepEP's memory bounds and refusals (deepep_limits.h).
#include "systems/deepep/deepep_limits.h"

#include <algorithm>
#include <fmt/format.h>

#include "config/run_params.h"
#include "gpu/gpu_config.h"
#include "net/net_config.h"
#include "net/send_windows.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "systems/deepep/deepep_params.h"

namespace moehub {
namespace {

// Low-latency mode: its kernels post every message without waiting for room (deepseek-ai/DeepEP
// csrc/kernels/ibgda_device.cuh, read at 19d974c5: nvshmemi_ibgda_put_nbi_warp and
// nvshmemi_ibgda_amo_nonfetch_add take their WQE slots with ibgda_reserve_wqe_slots, an atomicAdd
// on resv_head that never polls the queue pair's consumer index), so a phase can be in flight at
// once; but a message here is a whole (token, expert) row (DeepEpLowLatency::write: one
// store or one RDMA transfer), not 128 B. The layer sends at most one message per (token, top-k
// slot) in each of dispatch and combine, one count per (rank, expert) after dispatch and one
// flag per (rank, expert) after combine; both kernels' messages may overlap in flight (a GPU
// starts its combine while others still dispatch), so the bound is the layer's messages.
uint64_t ll_flow_messages_bound(const Config& c) {
  const WorkloadConfig w = WorkloadConfig::from(c);
  const ModelShape m = ModelShape::from(c);
  const auto tokens = static_cast<uint64_t>(RunParams::from(c).tokens);
  const auto experts = static_cast<uint64_t>(m.experts() + w.redundant_experts);
  return 2 * tokens * static_cast<uint64_t>(m.top_k()) + 2 * static_cast<uint64_t>(w.gpus) * experts;
}

// What one GPU signal holds (gpu::Gpu::Signal, 88 B by sizeof on this build), twice for the
// signal vector's doubling, plus its name's heap chunk (glibc: 48 B for the low-latency names of
// 27-33 characters), rounded up.
constexpr uint64_t kDeepEpSignalBytes = 256;

}  // namespace

// Low-latency mode: each GPU creates a receive count per (local expert, source rank), a finish
// counter and a combine flag per expert (DeepEpLowLatency's constructor): 3 x the physical experts
// per GPU (L x N = E). At 1024 GPUs 3.1 M signals, which the estimate missed: it was 2236 MiB
// against a measured 2.8 GiB (lead, session 28).
uint64_t deepep_state_bytes(const Config& c) {
  if (DeepEpParams::from(c).mode != DeepEpMode::LowLatency) return 0;
  const WorkloadConfig w = WorkloadConfig::from(c);
  const auto experts = static_cast<uint64_t>(ModelShape::from(c).experts() + w.redundant_experts);
  return static_cast<uint64_t>(w.gpus) * 3 * experts * kDeepEpSignalBytes;
}

// Normal mode: every store of its kernels goes through the GPU's store port, which asks the
// store's own path's window (NetworkStorePort::pump); across nodes the RDMA puts and head atomics
// are bulk transfers (DeepEpInternode::put, head_amo), which a sender issues only while its
// chunk fits the receiver's ring: per (source, channel, node) and kernel, at most rdma_ring /
// rdma_chunk puts (rounded up as DeepEpInternode::config does) and as many heads.
std::optional<uint64_t> deepep_flow_messages_bound(const Config& c) {
  const DeepEpParams p = DeepEpParams::from(c);
  if (p.mode == DeepEpMode::LowLatency) return ll_flow_messages_bound(c);
  const NetConfig net = NetConfig::from(c, static_cast<int>(RunParams::from(c).gpus));
  uint64_t bound = SendWindows::most_outstanding(net);
  if (!net.scale_out()) return bound;
  const auto chunks = [](const InternodeRing& r) {
    return static_cast<uint64_t>((r.rdma_ring + r.rdma_chunk - 1) / r.rdma_chunk);
  };
  const auto gpus = static_cast<uint64_t>(net.gpus), per_node = static_cast<uint64_t>(net.gpus_per_node);
  const uint64_t nodes = (gpus + per_node - 1) / per_node;
  bound += gpus * (p.num_sms / 2) * nodes * 2 * (chunks(p.internode.d) + chunks(p.internode.c));
  return bound;
}

// What DeepEP refuses by its own code before anything runs. Normal mode across nodes: a CTA
// holds a warp group per node and per NVLink peer (start_internode), which the SM must hold
// (gpu.max_blocks_per_sm); DeepEP's own normal internode kernels are instantiated for at most 20
// nodes (SWITCH_RDMA_RANKS, csrc/kernels/launch.cuh), and at more it is the low-latency kernels
// (pure RDMA, one warp group per expert) that run. Low-latency mode: every GPU's tokens must
// fit its receive slots (deep_ep.cpp:1430 asserts num_tokens <= num_max_dispatch_tokens_per_rank,
// a size the caller chooses and allocates the buffer by: get_low_latency_rdma_size_hint), and
// the token partition gives GPU 0 the most, ceil(tokens / GPUs) (TokenPartition).
std::pair<std::string, std::string> deepep_refusal(const Config& c) {
  const DeepEpParams p = DeepEpParams::from(c);
  const RunParams run = RunParams::from(c);
  if (p.mode == DeepEpMode::LowLatency) {
    const int64_t most = (run.tokens + run.gpus - 1) / std::max<int64_t>(run.gpus, 1);
    if (most <= p.ll.max_dispatch_tokens) return {};
    return {"systems.deepep.ll_max_dispatch_tokens_per_rank",
            fmt::format("(low-latency) dispatches {} tokens from GPU 0, more than its {} receive slots per (expert, "
                        "source); set it to at least {} (DeepEP's caller sizes the buffer by "
                        "num_max_dispatch_tokens_per_rank)",
                        most, p.ll.max_dispatch_tokens, most)};
  }
  const NetConfig net = NetConfig::from(c, static_cast<int>(run.gpus));
  if (!net.scale_out()) return {};
  const int64_t nodes = run.gpus / net.gpus_per_node, groups = nodes + net.gpus_per_node;
  const uint32_t most = gpu::GpuConfig::from(c).max_blocks_per_sm;
  if (most == 0 || groups <= most) return {};
  return {"systems.deepep.mode",
          fmt::format("(normal) internode kernels need {} warp groups per SM on {} nodes, more than "
                      "gpu.max_blocks_per_sm ({}); DeepEP's own take at most 20 nodes, beyond which its "
                      "low-latency kernels run: systems.deepep.mode=low-latency",
                      groups, nodes, most)};
}

}  // namespace moehub
