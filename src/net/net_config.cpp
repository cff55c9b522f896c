#include "net/net_config.h"

#include <fmt/format.h>

#include "config/param_table.h"
#include "net/collectives.h"
#include "net/net_params.h"
#include "sim/error.h"
#include "sim/units.h"

namespace moehub {

namespace {

// Buffers and chunks are counted in 32-bit flits and slots; 4 GiB is far beyond any real one.
constexpr double kMaxBufferBytes = 4294967296.0;

// The scale-out fabric (src/net/fabric_topology.h).
void declare_fabric(ParamTable<NetConfig>& t) {
  t.integer("net.gpus_per_node", &NetConfig::gpus_per_node,
            "GPUs per node on one NVSwitch domain; 0: all GPUs in one domain, no scale-out fabric")
      .at_least(0)
      .at_most(4096)
      .in_unit("GPUs");
  t.bandwidth("net.pcie_bandwidth", &NetConfig::pcie_bandwidth, "GPU-NIC PCIe bandwidth per direction (GPUDirect RDMA)")
      .positive();
  t.time("net.pcie_latency", &NetConfig::pcie_latency, "One-way latency across PCIe between a GPU and its NIC");
  t.bandwidth("net.nic_bandwidth", &NetConfig::nic_bandwidth, "One NIC port's bandwidth per direction").positive();
  t.time("net.nic_latency", &NetConfig::nic_latency, "One-way NIC processing latency of an RDMA message");
  t.real("net.nic_message_rate", &NetConfig::nic_message_rate, "Fabric packets one NIC sends per second")
      .at_least(1)
      .at_most(1e12)
      .in_unit("packets/s");
  t.integer("net.nic_send_queue_depth", &NetConfig::nic_send_queue_depth,
            "RDMA work requests one queue pair (a GPU pair across nodes) may have outstanding; flow back-pressure")
      .at_least(1)
      .at_most(1 << 20)
      .in_unit("messages");
  t.bytes("net.rdma_mtu_bytes", &NetConfig::rdma_mtu_bytes, "Largest payload of one fabric packet (RDMA MTU)")
      .positive()
      .at_most(1 << 20);
  t.bytes("net.rdma_header_bytes", &NetConfig::rdma_header_bytes, "Header and trailer bytes of one fabric packet")
      .at_most(4096);
  t.integer("net.fabric_switch_ports", &NetConfig::fabric_switch_ports, "Ports of one leaf or spine switch")
      .at_least(2)
      .at_most(65536)
      .in_unit("ports");
  t.integer("net.fabric_oversubscription", &NetConfig::fabric_oversubscription,
            "A leaf's NIC-facing ports per spine-facing port (1: non-blocking)")
      .at_least(1)
      .at_most(64)
      .in_unit("ratio");
  t.choice("net.fabric_planes", &NetConfig::fabric_planes,
           std::vector<std::pair<std::string, FabricPlanes>>{{"shared", FabricPlanes::Shared},
                                                             {"per-rail", FabricPlanes::PerRail}},
           "shared: every leaf has a link to every spine; per-rail: each rail is its own two-tier fat tree "
           "(a plane), so a transfer between rails on different nodes has no path and is refused");
  t.integer("net.fabric_rails", &NetConfig::fabric_rails,
            "Rails of the fat tree: the NIC of a node's GPU with local index i is on rail i % rails, each rail its own "
            "leaves; 0: one rail per GPU of a node (net.gpus_per_node)")
      .at_least(0)
      .at_most(4096)
      .in_unit("rails");
  t.bandwidth("net.fabric_link_bandwidth", &NetConfig::fabric_link_bandwidth, "One leaf-spine link's bandwidth per direction")
      .positive();
  t.time("net.fabric_cable_latency", &NetConfig::fabric_cable_latency, "One cable's latency (NIC-leaf, leaf-spine)");
  t.time("net.fabric_switch_latency", &NetConfig::fabric_switch_latency, "One fabric switch's traversal latency");
  t.bytes("net.fabric_port_buffer", &NetConfig::fabric_port_buffer_bytes,
          "Packet fidelity across nodes: the input buffer at the far end of each NIC-leaf, leaf-spine, spine-leaf and "
          "leaf-NIC link (InfiniBand link-level credits): a packet starts on the link only while it has room for the "
          "packet's wire bytes; 0: unbounded")
      .at_most(kMaxBufferBytes);
}

ParamTable<NetConfig> net_table() {
  ParamTable<NetConfig> t;
  t.integer("net.switch_planes", &NetConfig::planes, "NVSwitch chips (planes) each GPU connects to")
      .at_least(1)
      .at_most(1024)
      .in_unit("switches");
  t.bandwidth("net.link_bandwidth", &NetConfig::gpu_bandwidth, "Per-GPU bandwidth in each direction, summed over all planes")
      .positive();
  t.time("net.gpu_switch_latency", &NetConfig::gpu_switch_latency, "One-way latency between a GPU port and a switch");
  t.bytes("net.flit_bytes", &NetConfig::flit_bytes, "Flit size").positive().at_most(65536);
  t.bytes("net.max_payload_bytes", &NetConfig::max_payload_bytes, "Largest payload one packet carries")
      .positive()
      .at_most(1 << 24);
  t.integer("net.header_flits", &NetConfig::header_flits, "Header flits per packet").at_most(1024).in_unit("flits");
  // Topology wiring and switch.
  t.integer("net.links_per_gpu", &NetConfig::links_per_gpu, "NVLink links per GPU, spread evenly over the switch planes")
      .at_least(1)
      .at_most(1024)
      .in_unit("links");
  t.integer("net.switch_ports", &NetConfig::switch_ports, "GPU-facing ports of one switch chip")
      .at_least(1)
      .at_most(65536)
      .in_unit("ports");
  t.time("net.switch_latency", &NetConfig::switch_latency, "Traversal latency of a switch, input buffer to output port");
  // Buffers (flow control). Each must hold at least one largest packet.
  t.bytes("net.egress_buffer", &NetConfig::egress_buffer_bytes,
          "GPU egress FIFO for requests, shared by all destinations and planes")
      .at_most(kMaxBufferBytes);
  t.bytes("net.switch_buffer", &NetConfig::switch_buffer_bytes,
          "Switch input buffer per port (per plane, per GPU), request class")
      .at_most(kMaxBufferBytes);
  t.bytes("net.ingress_buffer", &NetConfig::ingress_buffer_bytes, "GPU ingress buffer per plane link, request class")
      .at_most(kMaxBufferBytes);
  t.bytes("net.response_buffer", &NetConfig::response_buffer_bytes,
          "Each buffer's separate space for the response class (acks, read responses)")
      .at_most(kMaxBufferBytes);
  t.boolean("net.write_ack", &NetConfig::write_ack,
            "Acknowledge every delivered write with a header-only packet back to the sender");
  t.choice("net.fidelity", &NetConfig::fidelity,
           std::vector<std::pair<std::string, NetFidelity>>{{"packet", NetFidelity::Packet}, {"flow", NetFidelity::Flow}},
           "Interconnect model: packets with flow control, or max-min fair flows");
  t.boolean("net.flow_merge_pairs", &NetConfig::flow_merge_pairs,
            "Flow fidelity: a pair's messages of one packet format share one flow, served in start order");
  t.time("net.flow_realloc_interval", &NetConfig::flow_realloc_interval,
         "Flow fidelity: full max-min reallocation at most once per this interval; in between only new flows are "
         "filled over the spare capacity (0: every change, exact)");
  t.time("net.flow_realloc_per_class", &NetConfig::flow_realloc_per_class,
         "Flow fidelity with net.flow_realloc_interval: the next full max-min reallocation waits at least this much "
         "per flow class the last one filled, if that is longer than the interval (0: the interval alone)")
      .at_most(1e6);
  t.bytes("net.flow_batch_bytes", &NetConfig::flow_batch_bytes,
          "Flow fidelity: a batchable message (MoE-Hub's lines) joins the last queued message of its pair's flow up to "
          "this many payload bytes, and all are delivered when the last has arrived (0: one flow message each, exact)")
      .at_most(1 << 24);
  t.bytes("net.flow_store_batch_bytes", &NetConfig::flow_store_batch_bytes,
          "Flow fidelity: a thread block's store (the GPU store port's message: Comet, CCFuser, DeepEP) joins the last "
          "queued store batch of its pair's flow up to this many payload bytes, and all are delivered when the last has "
          "arrived (0: one flow message each, exact)")
      .at_most(1 << 24);
  declare_fabric(t);
  return t;
}

// NCCL-style all-to-all (src/net/collectives).
ParamTable<NcclConfig> nccl_table() {
  ParamTable<NcclConfig> t;
  t.bytes("net.nccl_chunk_bytes", &NcclConfig::chunk_bytes, "NCCL p2p chunk size on NVLink (one FIFO slot)")
      .positive()
      .at_most(kMaxBufferBytes);
  t.integer("net.nccl_steps", &NcclConfig::steps, "NCCL FIFO slots per connection: chunks in flight per channel")
      .at_least(1)
      .at_most(1024)
      .in_unit("slots");
  t.integer("net.nccl_channels_per_peer", &NcclConfig::channels_per_peer, "NCCL p2p channels (connections) per peer")
      .at_least(1)
      .at_most(1024)
      .in_unit("channels");
  t.bytes("net.nccl_p2p_ll_threshold", &NcclConfig::ll_threshold_bytes,
          "NCCL p2p: a pair's send uses LL while its bytes <= channels x this (NCCL_P2P_LL_THRESHOLD)")
      .at_most(kMaxBufferBytes);
  t.boolean("net.nccl_pxn", &NcclConfig::pxn,
            "NCCL p2p across nodes: a pair on different rails goes over NVLink to the sender node's GPU on the "
            "receiver's rail and out of its NIC (PXN)");
  t.bytes("net.nccl_net_chunk_bytes", &NcclConfig::net_chunk_bytes,
          "NCCL p2p step size of every pair when the GPUs span nodes (NCCL_P2P_NET_CHUNKSIZE)")
      .positive()
      .at_most(kMaxBufferBytes);
  t.time("net.nccl_proxy_post_cost", &NcclConfig::proxy_post_cost,
         "Host time of one verbs post on a GPU's NCCL proxy thread (ibv_post_send or ibv_post_recv)")
      .at_most(1e9);  // 1 ms
  t.time("net.nccl_proxy_poll_cost", &NcclConfig::proxy_poll_cost,
         "Host time of one ibv_poll_cq that returns a completion on a GPU's NCCL proxy thread")
      .at_most(1e9);  // 1 ms
  t.boolean("net.nccl_gdr_flush", &NcclConfig::gdr_flush,
            "NCCL across nodes: the receiver's proxy flushes each received step (an RDMA read through the NIC) "
            "before it releases the step to the GPU");
  return t;
}

}  // namespace

void declare_net_params(ParamRegistry& r) {
  net_table().declare(r);
  nccl_table().declare(r);
}

NetConfig NetConfig::from(const Config& c, int gpus) {
  NetConfig n;
  n.gpus = gpus;
  net_table().read(c, n);
  n.validate();
  return n;
}

NcclConfig NcclConfig::from(const Config& c) {
  NcclConfig n;
  nccl_table().read(c, n);
  return n;
}

void NetConfig::validate() const {
  if (gpus < 1) throw UserError("run.gpus", "the network needs at least 1 GPU");
  if (planes < 1) throw UserError("net.switch_planes", "must be at least 1");
  if (gpu_bandwidth.bytes_per_second() == 0) throw UserError("net.link_bandwidth", "must be greater than 0");
  if (plane_bandwidth().bytes_per_second() == 0) {
    throw UserError("net.link_bandwidth", fmt::format("{} split over {} planes leaves 0 B/s per plane",
                                                      format_bandwidth(gpu_bandwidth), planes));
  }
  if (gpu_switch_latency < Time::zero()) throw UserError("net.gpu_switch_latency", "must not be negative");
  if (switch_latency < Time::zero()) throw UserError("net.switch_latency", "must not be negative");
  if (flit_bytes == 0) throw UserError("net.flit_bytes", "must be greater than 0");
  if (max_payload_bytes == 0) throw UserError("net.max_payload_bytes", "must be greater than 0");
  if (wire_flits(0) == 0) throw UserError("net.header_flits", "a header-only packet (an ack) would have no flits");
  if (links_per_gpu % planes != 0) {
    throw UserError("net.switch_planes", fmt::format("{} links per GPU (net.links_per_gpu) cannot be spread evenly over {} planes",
                                                     links_per_gpu, planes));
  }
  if (flow_realloc_interval < Time::zero()) throw UserError("net.flow_realloc_interval", "must not be negative");
  if (flow_realloc_per_class < Time::zero()) throw UserError("net.flow_realloc_per_class", "must not be negative");
  if (flow_realloc_per_class > Time::zero() && flow_realloc_interval <= Time::zero()) {
    throw UserError("net.flow_realloc_per_class", "needs net.flow_realloc_interval > 0 (it lengthens that interval)");
  }
  if (flow_store_batch_bytes > 0 && !flow_merge_pairs) {
    throw UserError("net.flow_store_batch_bytes", "needs net.flow_merge_pairs = true (a batch joins a pair's queued message)");
  }
  if (flow_batch_bytes > 0 && !flow_merge_pairs) {
    throw UserError("net.flow_batch_bytes", "needs net.flow_merge_pairs = true (a batch joins a pair's queued message)");
  }
  if (flow_realloc_interval > Time::zero() && !flow_merge_pairs) {
    throw UserError("net.flow_realloc_interval", "needs net.flow_merge_pairs = true (a class's weight must not change between "
                                                 "full allocations)");
  }
  if (gpus_per_node > 0) {
    validate_fabric();
  } else {
    check_switch_ports(gpus, "run.gpus", "");
  }
  const uint64_t largest = static_cast<uint64_t>(wire_flits(max_payload_bytes)) * flit_bytes;
  const auto check = [&](const char* key, uint64_t bytes, uint64_t need, const char* what) {
    if (bytes < need) {
      throw UserError(key, fmt::format("{} must hold at least {} ({}), got {}", "buffer", format_bytes(need), what,
                                       format_bytes(bytes)));
    }
  };
  check("net.egress_buffer", egress_buffer_bytes, largest, "one largest packet");
  check("net.switch_buffer", switch_buffer_bytes, largest, "one largest packet");
  check("net.ingress_buffer", ingress_buffer_bytes, largest, "one largest packet");
  check("net.response_buffer", response_buffer_bytes, largest, "one largest packet, e.g. a read response");
}

void NetConfig::check_switch_ports(int domain_gpus, const char* key, const char* what) const {
  const int64_t ports = static_cast<int64_t>(domain_gpus) * (links_per_gpu / planes);
  if (ports > switch_ports) {
    throw UserError(key, fmt::format("{} GPUs{} x {} links per plane need {} ports on each switch, which has {} "
                                     "(net.switch_ports)",
                                     domain_gpus, what, links_per_gpu / planes, ports, switch_ports));
  }
}

void NetConfig::validate_fabric() const {
  check_switch_ports(gpus_per_node, "net.gpus_per_node", " per node");
  if (gpus % gpus_per_node != 0) {
    throw UserError("run.gpus", fmt::format("{} GPUs are not whole nodes of {} (net.gpus_per_node)", gpus, gpus_per_node));
  }
  if (!scale_out()) return;
  const int nodes = gpus / gpus_per_node;
  // The NVLink packet model keeps per-output input sets in 64-bit masks (PacketNetwork).
  if (fidelity == NetFidelity::Packet && gpus > 64) {
    throw UserError("net.fidelity", fmt::format("the packet fidelity models up to 64 GPUs, not {} ({} nodes of {}); "
                                                "use net.fidelity = \"flow\"",
                                                gpus, nodes, gpus_per_node));
  }
  const int radix = fabric_switch_ports;
  if (radix % (fabric_oversubscription + 1) != 0) {
    throw UserError("net.fabric_oversubscription", fmt::format("{} leaf ports cannot be split {}:1 between NICs and spines",
                                                               radix, fabric_oversubscription));
  }
  const int down = radix / (fabric_oversubscription + 1) * fabric_oversubscription;
  // A spine has a port for every leaf it reaches: all leaves, or its own plane's.
  if (gpus_per_node % rails() != 0) {
    throw UserError("net.fabric_rails",
                    fmt::format("{} rails do not divide the {} GPUs of a node (net.gpus_per_node)", rails(), gpus_per_node));
  }
  const int64_t nics_per_rail = static_cast<int64_t>(nodes) * (gpus_per_node / rails());
  const int64_t per_rail = (nics_per_rail + down - 1) / down;
  const bool planes = fabric_planes == FabricPlanes::PerRail;
  const int64_t leaves = planes ? per_rail : static_cast<int64_t>(rails()) * per_rail;
  if (leaves > radix) {
    throw UserError("net.fabric_switch_ports",
                    fmt::format("{} nodes need {} leaves{} ({} rails, {} NICs per leaf), each with a port on every spine{}, "
                                "which has {}",
                                nodes, leaves, planes ? " per plane" : "", rails(), down, planes ? " of its plane" : "",
                                radix));
  }
  if (rdma_mtu_bytes == 0) throw UserError("net.rdma_mtu_bytes", "must be greater than 0");
  // A buffer must take the largest packet, or a link whose far end is empty could never send.
  const uint64_t largest = rdma_wire_bytes(rdma_mtu_bytes);
  if (fabric_port_buffer_bytes != 0 && fabric_port_buffer_bytes < largest) {
    throw UserError("net.fabric_port_buffer", fmt::format("{} B cannot hold one {} B fabric packet (net.rdma_mtu_bytes "
                                                          "plus net.rdma_header_bytes); 0 leaves it unbounded",
                                                          fabric_port_buffer_bytes, largest));
  }
}

uint64_t NetConfig::wire_bytes(uint64_t payload) const {
  const uint64_t full = payload / max_payload_bytes;
  const uint32_t rest = static_cast<uint32_t>(payload % max_payload_bytes);
  uint64_t flits = full * wire_flits(max_payload_bytes);
  if (rest) flits += wire_flits(rest);
  return flits * flit_bytes;
}

Time NetConfig::unloaded_packet_latency(uint32_t payload_bytes) const {
  const Time ser = plane_bandwidth().transfer_time(static_cast<uint64_t>(wire_flits(payload_bytes)) * flit_bytes);
  return ser + gpu_switch_latency + switch_latency + ser + gpu_switch_latency;
}

}  // namespace moehub
