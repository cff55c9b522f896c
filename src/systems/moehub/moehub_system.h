#pragma once
// MoE-Hub (paper IV) and its ablations (VI-C) as one system with two hardware switches:
//   mh-base: st.rowsp + AAU only; stores go to the fabric in issue order; consumers poll flags.
//   mh-pkt:  + Runtime Packet Manager at every egress.
//   mh-dep:  + Data Availability Manager: GEMM1 tiles gated and released by write acks.
//   moehub:  both.
// The program (routing kernel issuing st.rowsp, gated GEMM tiles, GEMM2 epilogue stores back,
// scaling at the source) is in moehub_program.cpp; the hardware wiring in hub_fabric.h.

#include <memory>

#include "config/config.h"
#include "config/param_registry.h"
#include "platform/moe_system.h"

namespace moehub {

// A MoE-Hub system is a named set of hub units on top of st.rowsp and the AAU.
struct MoeHubVariant {
  const char* name;
  const char* description;
  bool rpm;  // hardware packet management (PKT)
  bool dam;  // hardware signalling (DEP)
};

inline constexpr MoeHubVariant kMoeHub{
    "moehub", "MoE-Hub: st.rowsp + AAU, RPM at the egress, DAM-gated GEMM tiles (paper IV)", true, true};
inline constexpr MoeHubVariant kMhBase{
    "mh-base", "MoE-Hub ablation: st.rowsp + AAU, stores in issue order, polling consumers (VI-C)", false, false};
inline constexpr MoeHubVariant kMhPkt{"mh-pkt", "MoE-Hub ablation: MH-Base + Runtime Packet Manager (VI-C)", true, false};
inline constexpr MoeHubVariant kMhDep{"mh-dep", "MoE-Hub ablation: MH-Base + Data Availability Manager (VI-C)", false, true};

// `systems.moehub.*`: shared by moehub and its ablations (they are the same system with units off).
void declare_moehub_params(ParamRegistry& registry);
std::unique_ptr<MoeSystem> make_moehub_system(const Config& config, MoeHubVariant variant);

}  // namespace moehub
