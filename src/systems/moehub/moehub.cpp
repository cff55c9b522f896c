// The four MoE-Hub systems of the paper's ablation (VI-C): one implementation
// (moehub_program.cpp, moehub_system.cpp, hub_fabric.cpp) with the RPM and the DAM switched.

#include "systems/moehub/moehub_system.h"

namespace moehub {
namespace {

template <const MoeHubVariant& V>
std::unique_ptr<MoeSystem> make_variant(const Config& c) {
  return make_moehub_system(c, V);
}

// The parameters are shared: only the full design's entry declares them.
template <const MoeHubVariant& V>
SystemEntry entry_of(void (*declare)(ParamRegistry&)) {
  return SystemEntry{V.name, V.description, declare, make_variant<V>, 130, true};  // EP+TP: each shard a MallocID
}

}  // namespace

SystemEntry moehub_system_entry() { return entry_of<kMoeHub>(declare_moehub_params); }
SystemEntry mh_base_system_entry() { return entry_of<kMhBase>(nullptr); }
SystemEntry mh_pkt_system_entry() { return entry_of<kMhPkt>(nullptr); }
SystemEntry mh_dep_system_entry() { return entry_of<kMhDep>(nullptr); }

}  // namespace moehub
