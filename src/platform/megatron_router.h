#pragma once
// Megatron-LM's TopKRouter forward (core_r0.10, softmax scores, top-k, dropless, BF16, TP=1) as
// the op sequence its Python code issues: every PyTorch call a framework op, each kernel sized
// by the bytes it moves (docs/research/megatron-router-te-ops.md part 1). Inference: 13
// framework ops and 15 kernels (the gating GEMM, top-k, softmax, the dense probs and routing
// map, tokens per expert); with the training-time auxiliary load-balancing loss
// (kernels.megatron_router_aux_loss), 26 and 23. Used by the systems built on Megatron's MoE
// layer (megatron-te, deepep under the flex dispatcher).

#include <cstdint>

#include "gpu/stream.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub {

// Issues GPU g's router on `stream` through its host; marks the layer's routing start.
void launch_megatron_router(Cluster& cluster, const SharedKernels& kernels, int g, gpu::Stream& stream, int64_t tokens);

}  // namespace moehub
