#pragma once
// Real gating in float32 (functional mode and the reference layer): logits = x W_gate, scores
// by softmax or sigmoid, optional group-limited selection, top-k, optional renormalisation of
// the k weights and a routed scaling factor (RouterSpec). Ties go to the lower expert index.

#include <cstdint>
#include <vector>

#include "moe/model_shape.h"
#include "moe/routing.h"

namespace moehub {

// One token: `logits` has spec.experts entries; writes top_k experts (best first) and weights.
void route_token(const RouterSpec& spec, const float* logits, int32_t* experts_out, float* weights_out);

// All tokens: x is tokens x hidden, w_gate is hidden x experts (both row-major).
Routing gate_tokens(const RouterSpec& spec, const std::vector<float>& x, int64_t tokens, int64_t hidden,
                    const std::vector<float>& w_gate);

}  // namespace moehub
