#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `gpu.*` section: one GPU's compute and memory resources.
void declare_gpu_params(ParamRegistry& registry);
}  // namespace moehub
