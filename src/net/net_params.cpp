#include "net/net_params.h"

namespace moehub {

void declare_net_params(ParamRegistry& r) {
  r.integer("net.switch_planes", "NVSwitch chips (planes) each GPU connects to").at_least(1).in_unit("switches");
  r.bandwidth("net.link_bandwidth", "Per-GPU bandwidth in each direction, summed over all planes").positive();
  r.time("net.gpu_switch_latency", "One-way latency between a GPU port and a switch");
  r.bytes("net.flit_bytes", "Flit size").positive();
  r.bytes("net.max_payload_bytes", "Largest payload one packet carries").positive();
  r.integer("net.header_flits", "Header flits per packet").at_least(0).in_unit("flits");
}

}  // namespace moehub
