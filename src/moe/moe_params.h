#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `model.*` section (layer shapes) and the `workload.*` section (routing statistics).
void declare_model_params(ParamRegistry& registry);
void declare_workload_params(ParamRegistry& registry);
}  // namespace moehub
