// The four MoE-Hub systems of the paper's ablation (VI-C): one implementation
// (moehub_program.cpp, moehub_system.cpp, hub_fabric.cpp) with the RPM and the DAM switched.

#include "systems/moehub/moehub_system.h"

#include "config/run_params.h"
#include "hub/hub_config.h"
#include "net/send_windows.h"

namespace moehub {
namespace {

template <const MoeHubVariant& V>
std::unique_ptr<MoeSystem> make_variant(const Config& c) {
  return make_moehub_system(c, V);
}

// Every message a hub puts on the flow network asks its own path's window first (HubFabric's
// FabricPort since session 24, InternodePath::try_send), so the windows bound what is in
// flight. Not across nodes with merged lines (a message then carries up to
// hub.internode.message_bytes of lines, each kept with it) or the rail route (a relay queues the
// lines it forwards without a bound of its own): there only a phase bounds them.
std::optional<uint64_t> flow_messages_bound(const Config& c) {
  const NetConfig net = NetConfig::from(c, static_cast<int>(RunParams::from(c).gpus));
  const InternodeConfig in = HubConfig::from(c).internode;
  if (net.scale_out() && (in.merge || in.route == InternodeRoute::Rail)) return std::nullopt;
  return SendWindows::most_outstanding(net);
}

// The parameters are shared: only the full design's entry declares them.
template <const MoeHubVariant& V>
SystemEntry entry_of(void (*declare)(ParamRegistry&)) {
  // 1024 B a row: heaptrack of moehub, DeepSeek-V3 on 16 GPUs, 4096 -> 8192 tokens (session 25):
  // 995 B a row, half of it the expert kernels' gated blocks (Gpu::next_candidate), a quarter
  // prepare_gpu's tables (130 B was measured on Mixtral, on one board). EP+TP: each shard a MallocID.
  SystemEntry e{V.name, V.description, declare, make_variant<V>, 1024, true};
  e.flow_messages_bound = flow_messages_bound;
  return e;
}

}  // namespace

SystemEntry moehub_system_entry() { return entry_of<kMoeHub>(declare_moehub_params); }
SystemEntry mh_base_system_entry() { return entry_of<kMhBase>(nullptr); }
SystemEntry mh_pkt_system_entry() { return entry_of<kMhPkt>(nullptr); }
SystemEntry mh_dep_system_entry() { return entry_of<kMhDep>(nullptr); }

}  // namespace moehub
