#include "platform/kernel_params.h"
#include "systems/system_registry.h"

#include <fmt/format.h>
#include <sstream>

#include "sim/error.h"

namespace moehub {

// Each system's file defines its entry.
SystemEntry ideal_system_entry();
SystemEntry megatron_te_system_entry();
SystemEntry deepep_system_entry();
SystemEntry fastermoe_system_entry();
SystemEntry tutel_system_entry();
SystemEntry comet_system_entry();
SystemEntry ccfuser_system_entry();
SystemEntry mh_base_system_entry();
SystemEntry mh_pkt_system_entry();
SystemEntry mh_dep_system_entry();
SystemEntry moehub_system_entry();

const std::vector<SystemEntry>& all_systems() {
  static const std::vector<SystemEntry> systems{
      ideal_system_entry(),
      megatron_te_system_entry(),
      deepep_system_entry(),
      fastermoe_system_entry(),
      tutel_system_entry(),
      comet_system_entry(),
      ccfuser_system_entry(),
      mh_base_system_entry(),
      mh_pkt_system_entry(),
      mh_dep_system_entry(),
      moehub_system_entry(),
  };
  return systems;
}

const SystemEntry* find_system(const std::string& name) {
  for (const auto& s : all_systems()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

void declare_systems_params(ParamRegistry& r) {
  KernelParams::declare(r);
  for (const auto& s : all_systems()) {
    if (s.declare_params) s.declare_params(r);
  }
}

std::vector<const SystemEntry*> select_systems(const std::string& spec) {
  std::vector<const SystemEntry*> chosen;
  if (spec == "all") {
    for (const auto& s : all_systems()) chosen.push_back(&s);
    return chosen;
  }
  std::stringstream ss(spec);
  for (std::string name; std::getline(ss, name, ',');) {
    if (name.empty()) continue;
    const SystemEntry* s = find_system(name);
    if (!s) {
      std::vector<std::string> known;
      for (const auto& e : all_systems()) known.push_back(e.name);
      throw UserError("run.systems", fmt::format("unknown system '{}' (known: {})", name, fmt::join(known, ", ")));
    }
    for (const auto* c : chosen) {
      if (c == s) throw UserError("run.systems", fmt::format("system '{}' named twice", name));
    }
    chosen.push_back(s);
  }
  if (chosen.empty()) throw UserError("run.systems", "names no system");
  return chosen;
}

}  // namespace moehub
