#pragma once
#include "config/param_registry.h"

namespace moehub {
// Every parameter of every layer, assembled explicitly (a test checks that each is present).
ParamRegistry build_param_registry();
}  // namespace moehub
