#include "net/net_params.h"

namespace moehub {

void declare_net_params(ParamRegistry& r) {
  r.integer("net.switch_planes", "NVSwitch chips (planes) each GPU connects to").at_least(1).in_unit("switches");
  r.bandwidth("net.link_bandwidth", "Per-GPU bandwidth in each direction, summed over all planes").positive();
  r.time("net.gpu_switch_latency", "One-way latency between a GPU port and a switch");
  r.bytes("net.flit_bytes", "Flit size").positive();
  r.bytes("net.max_payload_bytes", "Largest payload one packet carries").positive();
  r.integer("net.header_flits", "Header flits per packet").at_least(0).in_unit("flits");
  // Topology wiring and switch.
  r.integer("net.links_per_gpu", "NVLink links per GPU, spread evenly over the switch planes").at_least(1).in_unit("links");
  r.integer("net.switch_ports", "GPU-facing ports of one switch chip").at_least(1).in_unit("ports");
  r.time("net.switch_latency", "Traversal latency of a switch, input buffer to output port");
  // Buffers (flow control). Each must hold at least one largest packet.
  r.bytes("net.egress_buffer", "GPU egress FIFO for requests, shared by all destinations and planes");
  r.bytes("net.switch_buffer", "Switch input buffer per port (per plane, per GPU), request class");
  r.bytes("net.ingress_buffer", "GPU ingress buffer per plane link, request class");
  r.bytes("net.response_buffer", "Each buffer's separate space for the response class (acks, read responses)");
  r.boolean("net.write_ack", "Acknowledge every delivered write with a header-only packet back to the sender");
  r.choice("net.fidelity", {"packet", "flow"}, "Interconnect model: packets with flow control, or max-min fair flows");
  // NCCL-style all-to-all (src/net/collectives).
  r.bytes("net.nccl_chunk_bytes", "NCCL p2p chunk size on NVLink (one FIFO slot)").positive();
  r.integer("net.nccl_steps", "NCCL FIFO slots per connection: chunks in flight per channel").at_least(1).in_unit("slots");
  r.integer("net.nccl_channels_per_peer", "NCCL p2p channels (connections) per peer").at_least(1).in_unit("channels");
}

}  // namespace moehub
