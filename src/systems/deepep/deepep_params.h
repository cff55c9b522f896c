// DeepEP's parameters (systems.deepep.*), shared by the system and its limits (deepep_limits.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/param_table.h"
#include "sim/error.h"
#include "sim/time.h"
#include "systems/deepep/deepep_internode.h"
#include "systems/deepep/deepep_low_latency.h"

namespace moehub {

// Which DeepEP kernels move the rows (docs/systems/deepep.md "Low-latency kernels").
enum class DeepEpMode : uint8_t { Normal, LowLatency };

struct DeepEpParams {
  DeepEpMode mode = DeepEpMode::Normal;
  uint32_t num_sms = 0;
  uint32_t kernel_threads = 0;
  uint32_t dispatch_chunk = 0, dispatch_ring = 0, combine_chunk = 0, combine_ring = 0;
  uint32_t notify_threads = 0, layout_threads = 0, layout_experts_per_block = 0, layout_ranks_per_block = 0;
  Time mapped_write_latency, host_poll_reaction;
  DeepEpInternodeParams internode;
  DeepEpLowLatencyParams ll;

  static ParamTable<DeepEpParams> table() {
    using P = DeepEpParams;
    ParamTable<P> t;
    t.choice("systems.deepep.mode", &P::mode,
             std::vector<std::pair<std::string, DeepEpMode>>{{"normal", DeepEpMode::Normal}, {"low-latency", DeepEpMode::LowLatency}},
             "DeepEP kernels: normal (Megatron's flex dispatcher, intranode or internode kernels) or low-latency "
             "(internode_ll.cu: per-expert messages, no host synchronisation)");
    t.integer("systems.deepep.num_sms", &P::num_sms, "SMs of the dispatch and combine kernels (Buffer.num_sms); even")
        .at_least(2)
        .at_most(1024);
    t.integer("systems.deepep.kernel_threads", &P::kernel_threads, "Threads per dispatch/combine CTA").at_least(32).at_most(1024);
    t.integer("systems.deepep.dispatch_chunk_tokens", &P::dispatch_chunk,
              "Tokens a dispatch sender stores per step (nvl_send_chunk)")
        .at_least(1);
    t.integer("systems.deepep.dispatch_ring_tokens", &P::dispatch_ring,
              "Dispatch ring slots per (channel, source) (nvl_recv_buffer)")
        .at_least(1);
    t.integer("systems.deepep.combine_chunk_tokens", &P::combine_chunk, "Tokens a combine sender stores per step").at_least(1);
    t.integer("systems.deepep.combine_ring_tokens", &P::combine_ring, "Combine ring slots per (channel, source)").at_least(1);
    t.integer("systems.deepep.notify_threads", &P::notify_threads, "Threads per notify_dispatch CTA").at_least(32).at_most(1024);
    t.integer("systems.deepep.layout_threads", &P::layout_threads, "Threads per get_dispatch_layout CTA").at_least(32).at_most(1024);
    t.integer("systems.deepep.layout_experts_per_block", &P::layout_experts_per_block,
              "Experts counted per get_dispatch_layout CTA")
        .at_least(1);
    t.integer("systems.deepep.layout_ranks_per_block", &P::layout_ranks_per_block, "Ranks counted per get_dispatch_layout CTA")
        .at_least(1);
    t.time("systems.deepep.mapped_write_latency", &P::mapped_write_latency,
           "PCIe latency of the GPU's store into host-mapped memory")
        .at_least(0);
    t.time("systems.deepep.host_poll_reaction", &P::host_poll_reaction,
           "Time for the spinning CPU to act on the mapped counter")
        .at_least(0);
    return t;
  }

  static DeepEpParams from(const Config& c) {
    DeepEpParams p;
    table().read(c, p);
    p.internode = DeepEpInternodeParams::from(c);
    p.ll = DeepEpLowLatencyParams::from(c);
    if (p.num_sms % 2 != 0) throw UserError("systems.deepep.num_sms", "must be even (one sender and one receiver CTA per channel)");
    if (p.dispatch_chunk > p.dispatch_ring) throw UserError("systems.deepep.dispatch_chunk_tokens", "exceeds the ring size");
    if (p.combine_chunk > p.combine_ring) throw UserError("systems.deepep.combine_chunk_tokens", "exceeds the ring size");
    return p;
  }
};

}  // namespace moehub
