#pragma once
// MoE-Hub's hardware wired into the cluster (paper Fig. 7): at every GPU a hub with an Address
// Allocation Unit (consumer side, always), optionally a Runtime Packet Manager at the egress,
// the store port that turns SM stores (ordinary st. and st.rowsp) into hub transactions, the
// adapter that hands the hub's packets to the NVLink fabric, and the receiver that runs
// arriving st.rowsp packets through the AAU, writes memory and then reports each landed write
// (its address and bytes) to a listener: the system's DAM contexts or polling flags.
//
// SM-to-hub path: stores are staged (gpu.store_staging_bytes) before they are cut into
// transactions; without an RPM one FIFO feeds the egress in issue order, with it one staging
// lane per peer partition feeds that partition. With more peers than hub.rpm.partitions, peers
// share partitions round-robin (the paper dedicates one per peer, for 8-16 peers).
//
// Transactions: the SM's coalescer hands the hub one request per piece of a line that one warp
// instruction wrote (`*_transaction_bytes`, never crossing a 128 B line). With the RPM they are
// merged per peer and line and scheduled; without it each goes to the fabric as its own packet
// in issue order. Local st.rowsp take the same AAU path without the fabric.
//
// Store tags (gpu::StoreRequest::tag) carry the store's encoding: see HubTag.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/store_port.h"
#include "hub/address_allocation_unit.h"
#include "hub/hub_counters.h"
#include "hub/hub_config.h"
#include "hub/hub_packet.h"
#include "hub/rowsp_registry.h"
#include "hub/runtime_packet_manager.h"
#include "net/packet.h"
#include "sim/per_gpu.h"
#include "sim/slab.h"
#include "systems/moehub/internode_path.h"

namespace moehub {

class Cluster;

// The instruction a store step carries in its 64-bit tag. st.rowsp: bit 63 set, bit 62 .nop,
// bits 61-48 region, 47-32 RowOffset, 31-0 RowID (the target GPU is the store's destination).
// st.: bit 63 clear, bits 39-0 the destination's local address (the hub adds the GPU above
// bit 40 for the fabric, as a peer address in the unified address space carries its GPU).
struct HubTag {
  bool rowsp = false;
  bool nop = false;
  uint32_t region = 0;
  uint64_t row_id = 0;
  uint64_t row_offset = 0;
  uint64_t address = 0;

  static uint64_t st_rowsp(MallocId id, uint64_t row_id, uint64_t row_offset, bool nop);
  static uint64_t st(uint64_t address);
  static HubTag decode(uint64_t tag);
};

// A write that has landed in a GPU's memory, as the hub reports it.
struct LandedWrite {
  int src = 0;                 // producing GPU
  bool rowsp = false;
  bool nop = false;
  uint32_t region = 0;         // st.rowsp: the region and row placed
  uint64_t row_id = 0;
  uint64_t row_offset = 0;
  uint64_t local_row_id = 0;
  uint64_t address = 0;        // device address written
  uint32_t bytes = 0;
};

class HubListener {
 public:
  virtual ~HubListener() = default;
  // Runs when the write's bytes are in GPU `gpu`'s memory (its write acknowledgement).
  virtual void on_landed(int gpu, const LandedWrite& write) = 0;
};

struct HubFabricConfig {
  bool rpm = false;                       // a Runtime Packet Manager at each egress
  uint32_t rowsp_transaction_bytes = 128; // bytes of a row one warp store instruction covers (dispatch)
  uint32_t st_transaction_bytes = 128;    // same for ordinary stores (GEMM2 epilogue)
};

// What each hub's fabric side sent: packets, their payload, the network's acknowledgements.
struct EgressCounters {
  uint64_t packets = 0;
  uint64_t payload_bytes = 0;
  uint64_t network_acks = 0;
  static const CounterTable<EgressCounters>& table();
};

struct HubFabricCounters {
  AauCounters aau;
  std::optional<RpmCounters> rpm;
  EgressCounters egress;
  std::optional<InternodeCounters> internode;  // only with hub.internode.route nic or rail
  uint64_t relay_peak_bytes = 0;                // the most one relay held (max over GPUs)
};

class HubFabric {
 public:
  HubFabric(Cluster& cluster, const HubConfig& hub, const HubFabricConfig& config, HubListener& listener);
  ~HubFabric();
  HubFabric(const HubFabric&) = delete;
  HubFabric& operator=(const HubFabric&) = delete;

  RowspRegistry& registry() { return registry_; }
  AddressAllocationUnit& aau(int g);
  // Every partly merged RPM entry may leave (a fence or kernel end); no-op without RPMs.
  void flush(int g);

  // After a run: what the internode paths left undone (messages open, unread or not forwarded).
  std::vector<std::string> internode_violations() const;

  // Totals over every GPU's hub: AAU, RPM (none on the direct path), egress.
  HubFabricCounters counters() const;

  // Internal pieces, defined in hub_fabric.cpp: each GPU's hub (Node) is an SM side (SmPort:
  // staging lanes, transactions, the RPM), a fabric side (FabricPort: packets onto the
  // network) and an ingress (Ingress: AAU, memory, landed reports).
  class Ingress;
  class FabricPort;
  class SmPort;
  class Node;

 private:
  Cluster& cluster_;
  HubConfig hub_;
  HubFabricConfig cfg_;
  HubListener& listener_;
  RowspRegistry registry_;
  // hub.flow_line_runs: the most whole lines one run carries (net.flow_batch_bytes over a line),
  // 0 where the reduction is not active (packet fidelity, no flow batches, an internode route).
  uint32_t run_limit_ = 0;
  Slab<LineMessage> messages_;  // internode path: lines of the messages in flight
  uint64_t unpacked_ = 0;       // internode messages the ingresses have read
  PerGpu<std::unique_ptr<Node>> nodes_;
};

}  // namespace moehub
