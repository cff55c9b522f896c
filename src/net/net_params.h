#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `net.*` section: the NVLink/NVSwitch fabric.
void declare_net_params(ParamRegistry& registry);
}  // namespace moehub
