#pragma once
// FastMoE's gate and count path (laekov/fastmoe v1.1.0) as the op sequence its Python code
// issues, shared by the systems built on FastMoE (fastermoe, and ccfuser, whose `mix_moe`
// package is a FastMoE fork with the same gate and count functions). Each call is a framework
// op; docs/systems/fastermoe.md lists each op with its source line.

#include <cstdint>

#include "gpu/stream.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub {

// NaiveGate.forward (fmoe/gates/naive_gate.py:31-41): nn.Linear, topk, view, softmax, and the
// dummy loss `torch.zeros(1).cuda()`, a blocking host-to-device copy. Marks the routing start.
void launch_fastmoe_gate(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens);
// count_by_gate before the count exchange (fmoe/functions.py:30-34): zeros, expert_count, long.
void launch_fastmoe_count(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens);
// count_by_gate after the exchange (fmoe/functions.py:45-48): cumsum, int, `lec_cum[-1].item()`
// (a host sync), empty, assign_pos.
void launch_fastmoe_positions(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens);

}  // namespace moehub
