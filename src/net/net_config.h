#pragma once
// The interconnect's configuration: topology (GPUs, switch planes, links), rates, latencies,
// packet format and buffer sizes. Built from a resolved Config by `from`, or by hand in tests;
// `validate` rejects what cannot be built, naming the key at fault.

#include <cstdint>

#include "config/config.h"
#include "sim/bandwidth.h"
#include "sim/time.h"

namespace moehub {

enum class NetFidelity { Packet, Flow };
// How the fat tree's spines join the rails: every leaf reaches every spine, or each rail is a
// two-tier fat tree of its own (DeepSeek-V3's multi-plane fat tree).
enum class FabricPlanes { Shared, PerRail };

struct NetConfig {
  int gpus = 8;
  int planes = 4;               // switch chips; every GPU has links to every plane
  int links_per_gpu = 8;        // spread evenly: links_per_gpu / planes links to each plane
  int switch_ports = 64;        // GPU-facing ports per switch chip
  Bandwidth gpu_bandwidth;      // per GPU, per direction, summed over planes
  Time gpu_switch_latency;      // one way, GPU port to switch (and back)
  Time switch_latency;          // switch input to output
  uint32_t flit_bytes = 16;
  uint32_t max_payload_bytes = 128;
  uint32_t header_flits = 1;
  uint64_t egress_buffer_bytes = 0;
  uint64_t switch_buffer_bytes = 0;
  uint64_t ingress_buffer_bytes = 0;
  uint64_t response_buffer_bytes = 0;
  bool write_ack = true;
  NetFidelity fidelity = NetFidelity::Packet;
  // Flow fidelity: the messages of one class (pair and packet format) form one flow served in
  // start order, instead of one flow each (a stated reduction, docs/network.md).
  bool flow_merge_pairs = false;
  // Flow fidelity: full max-min allocations at most once per this interval (0: at every
  // change, exact); a stated reduction, docs/network.md.
  Time flow_realloc_interval;
  // Flow fidelity with flow_realloc_interval: the wait after a full allocation is at least this
  // much per class it filled (0: the interval alone); a stated reduction, docs/network.md.
  Time flow_realloc_per_class;
  // Flow fidelity: a message its sender marks batchable (Packet::flow_batch) joins the last
  // queued message of its class up to this many payload bytes and is delivered with it (0: one
  // flow message each, exact); a stated reduction, docs/network.md.
  uint32_t flow_batch_bytes = 0;
  // The same for messages marked Packet::kFlowBatchStore (the GPU store port's stores), with
  // their own limit: a store is often larger than a whole batch of lines.
  uint32_t flow_store_batch_bytes = 0;
  // Scale-out (src/net/fabric_topology.h). gpus_per_node = 0: one NVLink domain, no fabric.
  int gpus_per_node = 0;
  Bandwidth pcie_bandwidth;         // GPU <-> NIC, per direction
  Time pcie_latency;                // one way, GPU to NIC across PCIe
  Bandwidth nic_bandwidth;          // one NIC port, per direction
  Time nic_latency;                 // one way, NIC processing of an RDMA message
  double nic_message_rate = 0;      // RDMA messages (MTU packets) one NIC sends per second
  uint32_t nic_send_queue_depth = 1024;  // RDMA work requests outstanding per queue pair (flow back-pressure)
  uint32_t rdma_mtu_bytes = 4096;   // largest payload of one fabric packet
  uint32_t rdma_header_bytes = 26;  // per fabric packet on the wire
  int fabric_switch_ports = 64;     // radix of a leaf or spine switch
  int fabric_oversubscription = 1;  // a leaf's NIC-facing ports per spine-facing port
  FabricPlanes fabric_planes = FabricPlanes::Shared;
  int fabric_rails = 0;  // rails (leaf groups): a GPU's NIC is on rail local index % rails; 0: gpus_per_node
  Bandwidth fabric_link_bandwidth;  // one leaf-spine link, per direction
  Time fabric_cable_latency;        // one cable, NIC-leaf or leaf-spine
  Time fabric_switch_latency;       // one fabric switch traversal
  uint64_t fabric_port_buffer_bytes = 0;  // packet fidelity: a fabric input port's buffer (link credits); 0 unbounded

  // `gpus` is the experiment's run.gpus (the net section does not own it).
  static NetConfig from(const Config& config, int gpus);
  // Throws UserError naming the key of the first problem.
  void validate() const;

  // Throws when a domain of that many GPUs needs more NVSwitch ports than a chip has.
  void check_switch_ports(int domain_gpus, const char* key, const char* what) const;
  void validate_fabric() const;

  // ceil(payload / flit) + header flits.
  uint32_t wire_flits(uint32_t payload_bytes) const {
    return (payload_bytes + flit_bytes - 1) / flit_bytes + header_flits;
  }
  // Bytes on the wire for `bytes` of payload cut into max-size packets.
  uint64_t wire_bytes(uint64_t payload_bytes) const;
  uint64_t packets_for(uint64_t payload_bytes) const {
    return (payload_bytes + max_payload_bytes - 1) / max_payload_bytes;
  }
  bool scale_out() const { return gpus_per_node > 0 && gpus > gpus_per_node; }
  int rails() const { return fabric_rails > 0 ? fabric_rails : gpus_per_node; }
  // Fabric wire bytes of a payload cut into MTU packets, and their count.
  uint64_t rdma_packets(uint64_t payload_bytes) const { return (payload_bytes + rdma_mtu_bytes - 1) / rdma_mtu_bytes; }
  uint64_t rdma_wire_bytes(uint64_t payload_bytes) const { return payload_bytes + rdma_packets(payload_bytes) * rdma_header_bytes; }
  // Per-direction rate of one GPU's links to one plane.
  Bandwidth plane_bandwidth() const { return gpu_bandwidth.scaled(1, static_cast<uint64_t>(planes)); }
  uint32_t buffer_flits(uint64_t bytes) const { return static_cast<uint32_t>(bytes / flit_bytes); }
  // One packet's time from the first bit leaving the GPU to its arrival at the destination,
  // with no contention: serialise, cross to the switch, traverse, serialise, cross to the GPU.
  Time unloaded_packet_latency(uint32_t payload_bytes) const;
};

}  // namespace moehub
