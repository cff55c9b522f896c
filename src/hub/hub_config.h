#pragma once
// Plain configuration structs of the hub's units, built from a resolved Config by `from` (tests
// build them by hand). Field comments give units; values live in configs/hardware/*.toml.

#include <cstdint>

#include "config/config.h"
#include "sim/frequency.h"
#include "sim/time.h"

namespace moehub {

struct AauConfig {
  Frequency clock;                   // hub clock
  uint32_t rat_entries = 0;          // mappings the RAT caches
  uint32_t rat_banks = 1;
  uint32_t rat_ports_per_bank = 1;   // accesses per bank per cycle
  uint32_t rat_lookup_cycles = 0;    // per RAT access (lookup, fill)
  uint32_t apt_entries = 0;          // regions per hub
  uint32_t apt_cycles = 0;           // RowPointer read-and-increment
  uint32_t row_id_bits = 32;         // RowIDs must fit
  uint32_t local_row_id_bits = 20;   // region capacities must fit
  uint32_t row_offset_bits = 16;     // region row sizes must fit
  uint64_t spill_entry_bytes = 32;   // memory traffic per spill or restore of one mapping
};

struct RpmConfig {
  Frequency clock;
  uint32_t partitions = 1;           // most peers served
  uint32_t entries_per_peer = 1;
  uint32_t entry_bytes = 128;        // one packet's payload
  uint32_t mask_granule_bytes = 4;   // bytes per validity bit
  Time timer_bypass = Time::zero();  // zero: no bypass
  uint32_t issue_cycles = 1;         // cycles between emitted packets
};

struct DamConfig {
  Frequency clock;
  uint32_t table_entries = 1;
  uint32_t counter_bits = 24;
  uint32_t global_counter_bits = 40;
  uint32_t lookup_cycles = 0;
};

enum class ReplicaPolicy { RoundRobin, LoadAware };

// The producer hub's one-to-many destination table (replica_selector.h; paper VII-A2).
struct ReplicaTableConfig {
  ReplicaPolicy policy = ReplicaPolicy::RoundRobin;
  uint32_t entries = 0;       // logical destinations with replicas the table holds
  uint32_t max_replicas = 0;  // endpoints per entry
  uint32_t lookup_cycles = 0; // per row (counted; pipelined beside the store path)
  uint32_t counter_bits = 0;  // per-peer row counters of the load-aware policy
};

// How a hub's lines reach a GPU on another node (docs/hub/scale-out.md, beyond the paper).
enum class InternodeRoute {
  Direct,  // each line its own RDMA message, the fabric window asked by peer partition (session 22)
  Nic,     // straight to the destination GPU's NIC, the window of that path asked
  Rail,    // RDMA to the destination node's GPU on the source's rail, whose hub forwards over NVLink
};

struct InternodeConfig {
  InternodeRoute route = InternodeRoute::Direct;
  bool merge = false;              // merge lines per first-hop GPU into RDMA messages (nic, rail)
  uint32_t message_bytes = 4096;   // most bytes (lines and descriptors) one merged message carries
  uint32_t descriptor_bytes = 16;  // per line of a merged message: region, RowID, RowOffset, mask, GPU
  Time merge_timeout = Time::zero(); // a partly merged message leaves when its first line is this old
  uint32_t relay_cycles = 1;       // hub cycles a relay takes to pick a forwarded line's NVLink port
};

struct AreaConfig {
  uint32_t technology_nm = 7;
  double sram_mbit_per_mm2 = 26.0;
  double dual_port_factor = 2.0;
  double cam_factor = 2.0;
  double gpu_die_mm2 = 814.0;
  // Logic: one standard cell's area each (um^2), the share of a placed block the cells fill.
  double nand2_um2 = 0;
  double xor2_um2 = 0;
  double ao22_um2 = 0;
  double half_adder_um2 = 0;
  double full_adder_um2 = 0;
  double flip_flop_um2 = 0;
  double logic_utilization = 1.0;
  uint32_t xbar_ports = 0;  // hub-crossbar ports that carry st.rowsp headers
  uint32_t sm_count = 0;    // gpu.sm_count: SMs that get the st.rowsp decode path
};

struct HubConfig {
  Frequency clock;  // copied into each unit's clock
  uint32_t address_bits = 49;
  // A stated reduction with net.flow_batch_bytes: a flow batch's run of whole lines of one row
  // lands as one write (one RAT access, one memory write, one landed report).
  bool flow_batch_runs = false;
  // A stated reduction at flow fidelity with net.flow_batch_bytes: a run of whole lines of one
  // store travels the SM side, the RPM, the fabric and the ingress as one item (docs/hub/wiring.md).
  bool flow_line_runs = false;
  // With flow_line_runs: ordinary st. stores (the combine's) make runs too.
  bool flow_line_runs_st = false;
  // With flow_line_runs: the most bytes of one run (0: net.flow_batch_bytes).
  uint32_t flow_run_bytes = 0;
  AauConfig aau;
  RpmConfig rpm;
  DamConfig dam;
  ReplicaTableConfig replica;
  InternodeConfig internode;
  AreaConfig area;
  static HubConfig from(const Config& c);
};

}  // namespace moehub
