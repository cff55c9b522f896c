#include "platform/resource_estimate.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <unistd.h>

#include "config/run_params.h"
#include "gpu/gpu_config.h"
#include "net/net_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

// Bytes of this program's own data structures, from the peak RSS of single-system runs
// (/usr/bin/time, 2026-12-05): the routed workload per token and per row (within ideal's 24 B
// per row over the 11.5 MB base); each system's per-row state at packet fidelity is its
// SystemEntry::memory_per_row; at flow fidelity each message accepted and not yet delivered is
// a queued flow member (mh-base, Mixtral: about 160 B per 128 B message, its captured packet
// included); in functional mode the float32 rows every system and the reference keep.
constexpr uint64_t kWorkloadPerToken = 8, kWorkloadPerRow = 8, kFlowPerMessage = 160;
// The program itself and each GPU's model (SMs, streams, kernels, memory, its share of the
// network), session 25: ideal at 8 tokens per GPU is 9.9 MB at 2 GPUs, 23.2 MB at 32 (packet
// fidelity, dgx-h800), 15.9 MB at 16 to 62.7 MB at 128 (flow, h800-cluster), 409-445 KB per GPU
// over about 9 MB; a system's kernels add to it, most Tutel's (DeepSeek-V3 on 16 GPUs at 1024
// tokens: 9.3 MB over ideal, 580 KB per GPU). Rounded up. Without them the estimate fell below
// runs of 16 and 64 GPUs once the messages in flight were bounded.
constexpr uint64_t kProgramBytes = 10ULL << 20, kPerGpu = 1ULL << 20;
constexpr uint64_t kFunctionalHiddenRowsPerRow = 8, kFunctionalFfnRowsPerRow = 2, kReferenceRowsPerToken = 3;

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(1ULL << 30); }

}  // namespace

uint64_t nccl_messages_bound(const NcclConfig& cfg, long double pairs, long double bytes) {
  const long double chunk = static_cast<long double>(std::max<uint64_t>(cfg.chunk_bytes, 1));
  const long double part = static_cast<long double>(std::max<uint64_t>(cfg.chunk_bytes / 8, 1));  // nccl_pair_channels
  const long double full = pairs * std::max(cfg.channels_per_peer, 0) * std::max(cfg.steps, 0);
  const long double by_bytes = pairs + std::ceil(bytes / chunk) + std::ceil(bytes / part);
  const long double most = std::min(full, by_bytes);
  return most >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(most);
}

ResourceEstimate estimate_resources(const Config& c, const ModelShape& m, const std::vector<const SystemEntry*>& systems,
                                    unsigned concurrent) {
  ResourceEstimate e;
  const RunParams run = RunParams::from(c);
  const NetConfig net = NetConfig::from(c, static_cast<int>(run.gpus));
  // Sizes are bounded by their parameters (run.tokens <= 2^40, model sizes <= 2^31), so these
  // products stay within 128 bits; they are summed in long double to avoid any wrap.
  const long double tokens = static_cast<long double>(run.tokens);
  const long double rows = tokens * static_cast<long double>(m.top_k());
  // At flow fidelity the messages in flight: at most a phase's (every row's messages of
  // net.max_payload_bytes queued at once), and at most what the system's paths let be
  // outstanding (SystemEntry::flow_messages_bound) where it has such a bound.
  const long double phase_messages =
      rows * static_cast<long double>(m.row_bytes()) / static_cast<long double>(net.max_payload_bytes);
  long double per_system = 0;
  for (const SystemEntry* s : systems) {
    long double b = rows * s->memory_per_row;
    if (s->state_bytes) b += static_cast<long double>(s->state_bytes(c));
    if (net.fidelity == NetFidelity::Flow) {
      const std::optional<uint64_t> bound = s->flow_messages_bound ? s->flow_messages_bound(c) : std::nullopt;
      const long double messages = bound ? std::min(phase_messages, static_cast<long double>(*bound)) : phase_messages;
      b += kFlowPerMessage * messages;
    }
    per_system = std::max(per_system, b);
  }
  long double bytes = kProgramBytes + static_cast<long double>(run.gpus) * kPerGpu + tokens * kWorkloadPerToken +
                      rows * kWorkloadPerRow + per_system * concurrent;
  if (run.functional) {
    const long double h = static_cast<long double>(m.hidden) * 4, f = static_cast<long double>(m.ffn_hidden) * 4;
    bytes += concurrent * rows * (kFunctionalHiddenRowsPerRow * h + kFunctionalFfnRowsPerRow * f) +
             tokens * kReferenceRowsPerToken * h;
  }
  e.memory_bytes = bytes >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bytes);
  const uint64_t set = run.memory_budget;
  e.budget_bytes = set ? set : physical_memory() / 2;
  const gpu::GpuConfig g = gpu::GpuConfig::from(c);
  const long double peak = static_cast<long double>(g.sm_tensor_peak_flops_per_second()) * g.sm_count *
                           static_cast<long double>(run.gpus);
  const long double flops = 2.0L * rows * static_cast<long double>(m.hidden) *
                            static_cast<long double>(m.gemm1_cols() + m.ffn_hidden);
  e.min_layer_seconds = peak > 0 ? static_cast<double>(flops / peak) : 0.0;
  return e;
}

void check_resources(const Config& c, const ModelShape& m, const std::vector<const SystemEntry*>& systems,
                     unsigned concurrent) {
  const ResourceEstimate e = estimate_resources(c, m, systems, concurrent);
  const RunParams run = RunParams::from(c);
  if (e.budget_bytes > 0 && e.memory_bytes > e.budget_bytes) {
    throw UserError("run.memory_budget",
                    fmt::format("the run needs about {:.1f} GiB ({} tokens{}); the budget is {:.1f} GiB (0 = half "
                                "the machine's memory; raise it or use fewer tokens)",
                                gib(e.memory_bytes), run.tokens,
                                run.functional ? ", functional" : "", gib(e.budget_bytes)));
  }
  const double limit = run.time_limit.seconds();
  if (e.min_layer_seconds > limit) {
    throw UserError("run.time_limit",
                    fmt::format("the layer's expert GEMMs alone need at least {:.3g} s of simulated time at peak "
                                "tensor throughput on {} GPUs; run.time_limit is {:.3g} s",
                                e.min_layer_seconds, run.gpus, limit));
  }
}

}  // namespace moehub
