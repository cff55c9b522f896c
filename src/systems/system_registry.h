#pragma once
// The list of systems, in report order. Registration is explicit (a test checks every name).

#include <string>
#include <vector>

#include "platform/moe_system.h"

namespace moehub {

const std::vector<SystemEntry>& all_systems();
const SystemEntry* find_system(const std::string& name);
// Declares `cluster.*` and every system's parameters.
void declare_systems_params(ParamRegistry& registry);
// "all" or a comma-separated list; UserError("run.systems", ...) names an unknown one.
std::vector<const SystemEntry*> select_systems(const std::string& spec);

}  // namespace moehub
