#pragma once
// Tutel's gate and extract_critical (microsoft/tutel v0.3.0, commit 71db950) as the op sequence
// its Python code issues: every torch call is a framework op, every kernel it launches sized by
// the bytes it moves. docs/systems/tutel.md lists each op with its source line.

#include <cstdint>

#include "gpu/stream.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub {

// MOELayer.forward up to the capacity (moe_layer.py:228-251, top.py:20-26 with the default
// fp32_gate=False, fast_dispatch.py:141-177 with losses.py:7-19): reshape, the gate linear,
// softmax, topk, per slot a one-hot mask, gate value and location, the GShard loss, the
// normalised gates and the int32 indices, over `m`'s experts and top-k (the gate's: logical
// under parallel_type 'model'). Marks the routing start.
void launch_tutel_routing(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens, const ModelShape& m);

// TutelMoeFastDispatcher.update (fast_dispatch.py:98-103), called by fast_encode and again by
// fast_decode: per slot the no-op int32 casts and view of indices and locations and the cast
// of the gate values to the dispatcher's fp32.
void launch_tutel_dispatcher_update(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, int64_t tokens,
                                    const ModelShape& m);

// Bytes of one element in the dispatcher: fp32 for every dtype but fp16 (fast_dispatch.py:92-93).
inline constexpr uint64_t kTutelDispatchBytes = 4;

}  // namespace moehub
