#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `gpu.*` section: one GPU's compute and memory resources, occupancy limits, GEMM tile,
// launch and polling costs.
void declare_gpu_params(ParamRegistry& registry);
// The `host.*` section: the CPU thread that issues work to the GPU and synchronises with it.
void declare_host_params(ParamRegistry& registry);
}  // namespace moehub
