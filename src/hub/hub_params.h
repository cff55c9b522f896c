#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `hub.*` section: MoE-Hub's structures (AAU, RPM, DAM) and the area model's densities.
void declare_hub_params(ParamRegistry& registry);
}  // namespace moehub
