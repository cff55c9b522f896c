#pragma once
#include "config/param_registry.h"

namespace moehub {
// The `run.*` section: what one experiment runs (presets, scale, seed, systems).
void declare_run_params(ParamRegistry& registry);
}  // namespace moehub
