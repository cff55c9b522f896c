// The four MoE-Hub systems of the paper's ablation (VI-C): one implementation
// (moehub_program.cpp, moehub_system.cpp, hub_fabric.cpp) with the RPM and the DAM switched.

#include "systems/moehub/moehub_system.h"

namespace moehub {

SystemEntry moehub_system_entry() {
  return SystemEntry{"moehub", "MoE-Hub: st.rowsp + AAU, RPM at the egress, DAM-gated GEMM tiles (paper IV)",
                     declare_moehub_params,
                     [](const Config& c) { return make_moehub_system(c, MoeHubVariant{true, true}); }};
}

SystemEntry mh_base_system_entry() {
  return SystemEntry{"mh-base", "MoE-Hub ablation: st.rowsp + AAU, stores in issue order, polling consumers (VI-C)",
                     nullptr, [](const Config& c) { return make_moehub_system(c, MoeHubVariant{false, false}); }};
}

SystemEntry mh_pkt_system_entry() {
  return SystemEntry{"mh-pkt", "MoE-Hub ablation: MH-Base + Runtime Packet Manager (VI-C)", nullptr,
                     [](const Config& c) { return make_moehub_system(c, MoeHubVariant{true, false}); }};
}

SystemEntry mh_dep_system_entry() {
  return SystemEntry{"mh-dep", "MoE-Hub ablation: MH-Base + Data Availability Manager (VI-C)", nullptr,
                     [](const Config& c) { return make_moehub_system(c, MoeHubVariant{false, true}); }};
}

}  // namespace moehub
