#pragma once
// The Python side of Comet's layer as the MoE-Hub authors' harness issues it
// (ZSL98/Megatron-LM fd11ea94, megatron/core/transformer/moe/moe_layer.py:694-729,
// MoELayer_flux_uniform_distribution.forward): Megatron's TopKRouter of that fork (router.py,
// moe_utils.py; load-balancing type "none" as in its launch_mixtral.sh:93), then an
// all-gather of the routing probabilities and one of the expert indices. docs/systems/comet.md
// lists each op with its source line.

#include <cstdint>

#include "gpu/stream.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub {

// moe_layer.py:696 the input's reshape and self.router(...) (router.py:297-315, 57-67, 256-295;
// moe_utils.py:306-324): the gate linear, two views, topk, softmax in fp32 and its cast back,
// indices.view(-1) and torch.bincount, whose CUDA kernel reads the indices' min and max to the
// host (pytorch aten/src/ATen/native/cuda/SummaryOps.cu `_bincount_cuda_template`: two blocking
// device-to-host copies). Marks the routing start.
void launch_comet_router(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens);

// moe_layer.py:697-702: the two torch.empty outputs of the all-gathers (host only).
void comet_all_gather_outputs(Cluster& c, int g);

// Bytes each GPU contributes to the all-gathers of moe_layer.py:703 (probs, [T, k] in the
// logits' bf16) and :704 (indices, [T, k] int64); T is the largest per-GPU token count, as
// `_all_gather_base` needs equal shards.
uint64_t comet_probs_bytes(const Cluster& c);
uint64_t comet_indices_bytes(const Cluster& c);

}  // namespace moehub
