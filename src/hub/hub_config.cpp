#include "hub/hub_config.h"

#include <fmt/format.h>

#include "config/param_table.h"
#include "hub/hub_params.h"
#include "sim/error.h"

namespace moehub {
namespace {

template <class Unit, class M>
auto in(Unit HubConfig::*unit, M member) {
  return [unit, member](HubConfig& h) -> auto& { return (h.*unit).*member; };
}

void declare_logic_area(ParamTable<HubConfig>& t);

void declare_storage_area(ParamTable<HubConfig>& t);

// hub.apt.replica_*: the one-to-many extension of paper VII-A2 (replica_selector.h).
void declare_replica_table(ParamTable<HubConfig>& t) {
  const auto rep = [](auto m) { return in(&HubConfig::replica, m); };
  t.choice("hub.apt.replica_policy", rep(&ReplicaTableConfig::policy),
           std::vector<std::pair<std::string, ReplicaPolicy>>{{"round-robin", ReplicaPolicy::RoundRobin},
                                                              {"load-aware", ReplicaPolicy::LoadAware}},
           "How the producer hub picks a replicated expert's endpoint per row: the entry's pointer, or the peer it "
           "has sent the fewest rows");
  t.integer("hub.apt.replica_entries", rep(&ReplicaTableConfig::entries),
            "One-to-many entries (logical destinations with replicas) per hub")
      .range(1, 65536)
      .in_unit("entries");
  t.integer("hub.apt.max_replicas", rep(&ReplicaTableConfig::max_replicas), "Endpoints one one-to-many entry holds")
      .range(2, 1024)
      .in_unit("endpoints");
  t.integer("hub.apt.replica_cycles", rep(&ReplicaTableConfig::lookup_cycles),
            "One-to-many lookup and selection latency per row (pipelined beside the store path)")
      .at_least(0)
      .at_most(1024)
      .in_unit("cycles");
  t.integer("hub.apt.replica_counter_bits", rep(&ReplicaTableConfig::counter_bits),
            "Width of the per-peer row counters of the load-aware policy")
      .range(1, 63)
      .in_unit("bits");
}

// hub.internode.*: how lines reach another node (docs/hub/scale-out.md; not in the paper).
void declare_internode(ParamTable<HubConfig>& t) {
  const auto net = [](auto m) { return in(&HubConfig::internode, m); };
  t.choice("hub.internode.route", net(&InternodeConfig::route),
           std::vector<std::pair<std::string, InternodeRoute>>{{"direct", InternodeRoute::Direct},
                                                               {"nic", InternodeRoute::Nic},
                                                               {"rail", InternodeRoute::Rail}},
           "How a line reaches a GPU on another node: its own RDMA message as on one board (direct), through the "
           "internode path straight to that GPU (nic), or by RDMA to the GPU of that node on the source's rail, which "
           "forwards it over NVLink (rail)");
  t.boolean("hub.internode.merge", net(&InternodeConfig::merge),
            "route nic or rail: merge lines to the same first-hop GPU into one RDMA message");
  t.bytes("hub.internode.message_bytes", net(&InternodeConfig::message_bytes),
          "Most bytes (lines and their descriptors) one merged RDMA message carries")
      .positive()
      .at_most(1 << 24);
  t.bytes("hub.internode.descriptor_bytes", net(&InternodeConfig::descriptor_bytes),
          "Bytes a line's descriptor (region, RowID, RowOffset, validity mask, final GPU) adds in a merged message")
      .at_most(4096);
  t.time("hub.internode.merge_timeout", net(&InternodeConfig::merge_timeout),
         "A partly merged RDMA message leaves when its first line has waited this long");
  t.integer("hub.internode.relay_cycles", net(&InternodeConfig::relay_cycles),
            "route rail: hub cycles the relay takes to send a forwarded line to its NVLink egress")
      .at_least(0)
      .at_most(1 << 20)
      .in_unit("cycles");
}

ParamTable<HubConfig> hub_table() {
  ParamTable<HubConfig> t;
  t.frequency("hub.clock", &HubConfig::clock, "Clock of the hub's structures; hub latencies are counted in its cycles")
      .positive();
  t.integer("hub.address_bits", &HubConfig::address_bits, "Width of a device address held in hub tables")
      .range(16, 64)
      .in_unit("bits");
  t.boolean("hub.flow_batch_runs", &HubConfig::flow_batch_runs,
            "A stated reduction, active only with net.flow_batch_bytes > 0 at flow fidelity: a flow batch's run of "
            "contiguous whole st.rowsp lines of one row lands at the receiving hub as one write (one RAT access, one "
            "memory write, one landed report); st. lines of a run share one memory write, each still reported");
  t.boolean("hub.flow_line_runs", &HubConfig::flow_line_runs,
            "A stated reduction, active only at flow fidelity with net.flow_batch_bytes of two lines or more and the "
            "direct inter-node route: a run of consecutive whole lines of one store (up to net.flow_batch_bytes) "
            "is one RPM entry, one scheduling decision (the issue slot advances by its lines), one flow message "
            "(its lines' wire bytes, window slots and RDMA counts) and one write at the receiving hub; every "
            "counter counts its lines. Runs of st.rowsp stores (the dispatch's rows) only, unless hub.flow_line_runs_st");
  t.boolean("hub.flow_line_runs_st", &HubConfig::flow_line_runs_st,
            "With hub.flow_line_runs: ordinary st. stores (the combine's) travel as runs of lines too (a further "
            "stated reduction for speed; a run is one store's lines and never joins another: docs/hub/wiring.md)");
  t.bytes("hub.flow_run_bytes", &HubConfig::flow_run_bytes,
          "With hub.flow_line_runs: the most bytes one run of lines carries (0: net.flow_batch_bytes); a run "
          "longer than net.flow_batch_bytes travels the fabric as a flow batch of its own. At most 255 lines")
      .at_most(1 << 20);

  const auto aau = [](auto m) { return in(&HubConfig::aau, m); };
  t.integer("hub.rat.entries", aau(&AauConfig::rat_entries),
            "Row Allocation Table entries ((MallocID, RowID) -> LocalRowID mappings cached)")
      .at_least(1)
      .in_unit("entries");
  t.integer("hub.rat.banks", aau(&AauConfig::rat_banks), "Row Allocation Table banks (independent SRAM arrays)")
      .at_least(1)
      .in_unit("banks");
  t.integer("hub.rat.ports_per_bank", aau(&AauConfig::rat_ports_per_bank), "Accesses one RAT bank serves per hub cycle")
      .at_least(1)
      .in_unit("ports");
  t.integer("hub.rat.lookup_cycles", aau(&AauConfig::rat_lookup_cycles), "RAT access latency (lookup or fill)")
      .at_least(0)
      .in_unit("cycles");
  t.integer("hub.rat.row_id_bits", aau(&AauConfig::row_id_bits), "Width of the RowID field of st.rowsp")
      .range(1, 63)
      .in_unit("bits");
  t.integer("hub.rat.local_row_id_bits", aau(&AauConfig::local_row_id_bits),
            "Width of a LocalRowID (bounds a region's capacity)")
      .range(1, 63)
      .in_unit("bits");
  t.integer("hub.rat.row_offset_bits", aau(&AauConfig::row_offset_bits),
            "Width of the RowOffset field of st.rowsp (bounds a region's row size)")
      .range(1, 63)
      .in_unit("bits");
  t.bytes("hub.rat.spill_entry_bytes", aau(&AauConfig::spill_entry_bytes),
          "Device-memory traffic of spilling or restoring one RAT mapping")
      .positive()
      .at_most(65536);

  t.integer("hub.apt.entries", aau(&AauConfig::apt_entries), "Allocation Pointer Table entries (live rowspMalloc regions per GPU)")
      .range(1, 65536)
      .in_unit("regions");
  t.integer("hub.apt.cycles", aau(&AauConfig::apt_cycles), "APT lookup-and-increment latency").at_least(0).in_unit("cycles");
  declare_replica_table(t);

  const auto rpm = [](auto m) { return in(&HubConfig::rpm, m); };
  t.integer("hub.rpm.partitions", rpm(&RpmConfig::partitions), "Remote-write buffer partitions (peers the RPM can serve)")
      .range(1, 65536)
      .in_unit("peers");
  t.integer("hub.rpm.entries_per_peer", rpm(&RpmConfig::entries_per_peer), "Remote-write buffer entries per peer partition")
      .range(1, 1073741823)
      .in_unit("entries");
  t.bytes("hub.rpm.entry_bytes", rpm(&RpmConfig::entry_bytes), "Bytes one buffer entry (one packet payload) holds")
      .positive()
      .at_most(1 << 24);
  t.bytes("hub.rpm.mask_granule_bytes", rpm(&RpmConfig::mask_granule_bytes),
          "Bytes covered by one bit of an entry's validity mask")
      .positive()
      .at_most(1 << 24);
  t.time("hub.rpm.timer_bypass", rpm(&RpmConfig::timer_bypass), "Age after which a partly merged entry is sent anyway (0ns: no bypass)");
  t.integer("hub.rpm.issue_cycles", rpm(&RpmConfig::issue_cycles), "Hub cycles between two packets emitted by the scheduler")
      .at_least(1)
      .in_unit("cycles");

  const auto dam = [](auto m) { return in(&HubConfig::dam, m); };
  t.integer("hub.dam.table_entries", dam(&DamConfig::table_entries), "Dependency Table entries (address range -> TB group)")
      .at_least(1)
      .in_unit("entries");
  t.integer("hub.dam.counter_bits", dam(&DamConfig::counter_bits), "Width of a TB status counter and of its threshold")
      .range(1, 63)
      .in_unit("bits");
  t.integer("hub.dam.global_counter_bits", dam(&DamConfig::global_counter_bits),
            "Width of the global counter and its expected total")
      .range(1, 63)
      .in_unit("bits");
  t.integer("hub.dam.lookup_cycles", dam(&DamConfig::lookup_cycles),
            "Dependency Table range lookup and counter update latency")
      .at_least(0)
      .in_unit("cycles");

  declare_internode(t);
  declare_storage_area(t);
  declare_logic_area(t);
  return t;
}

// hub.area.*: the storage side of `moehub area` (the logic side is declare_logic_area).
void declare_storage_area(ParamTable<HubConfig>& t) {
  const auto area = [](auto m) { return in(&HubConfig::area, m); };
  t.integer("hub.area.technology_nm", area(&AreaConfig::technology_nm), "Technology node of the area estimate")
      .range(1, 1000)
      .in_unit("nm");
  t.real("hub.area.sram_mbit_per_mm2", area(&AreaConfig::sram_mbit_per_mm2), "Single-port SRAM macro density incl. periphery")
      .positive()
      .at_most(1000)
      .in_unit("Mbit/mm^2");
  t.real("hub.area.dual_port_factor", area(&AreaConfig::dual_port_factor),
         "Area per bit of dual-port SRAM relative to single-port (assumption)")
      .range(1, 100)
      .in_unit("ratio");
  t.real("hub.area.cam_factor", area(&AreaConfig::cam_factor),
         "Area per bit of binary CAM relative to single-port SRAM (assumption)")
      .range(1, 100)
      .in_unit("ratio");
  t.real("hub.area.gpu_die_mm2", area(&AreaConfig::gpu_die_mm2), "GPU die area the overhead is compared with")
      .positive()
      .at_most(1e5)
      .in_unit("mm^2");
}

// The logic estimate's cell areas (7 nm standard cells) and placement.
void declare_logic_area(ParamTable<HubConfig>& t) {
  const auto area = [](auto m) { return in(&HubConfig::area, m); };
  const auto cell = [&](const char* key, double AreaConfig::*m, const char* what) {
    t.real(key, area(m), what).positive().at_most(100).in_unit("um^2");
  };
  cell("hub.area.nand2_um2", &AreaConfig::nand2_um2, "Area of a 2-input NAND, the gate-equivalent unit");
  cell("hub.area.xor2_um2", &AreaConfig::xor2_um2, "Area of a 2-input XOR (comparator bit, hash bit)");
  cell("hub.area.ao22_um2", &AreaConfig::ao22_um2, "Area of an AND-OR 2-2 cell (one-hot select, 2:1 mux bit)");
  cell("hub.area.half_adder_um2", &AreaConfig::half_adder_um2, "Area of a half adder (incrementer bit)");
  cell("hub.area.full_adder_um2", &AreaConfig::full_adder_um2, "Area of a full adder (adder, comparator bit)");
  cell("hub.area.flip_flop_um2", &AreaConfig::flip_flop_um2, "Area of a D flip-flop (register bit)");
  t.real("hub.area.logic_utilization", area(&AreaConfig::logic_utilization),
         "Share of a placed logic block that its cells fill; the rest is routing (assumption)")
      .positive()
      .at_most(1)
      .in_unit("fraction");
  t.integer("hub.area.xbar_ports", area(&AreaConfig::xbar_ports),
            "Hub-crossbar ports widened for st.rowsp headers (assumption)")
      .range(0, 64)
      .in_unit("ports");
}

void check_aau(const AauConfig& a) {
  if (a.rat_banks > a.rat_entries) {
    throw UserError("hub.rat.banks", fmt::format("{} banks for {} entries: every bank needs an entry", a.rat_banks,
                                                 a.rat_entries));
  }
}

void check_rpm(const RpmConfig& r) {
  if (r.entry_bytes % r.mask_granule_bytes != 0) {
    throw UserError("hub.rpm.mask_granule_bytes",
                    fmt::format("{} B does not divide hub.rpm.entry_bytes ({} B)", r.mask_granule_bytes, r.entry_bytes));
  }
  if (r.entry_bytes / r.mask_granule_bytes > 64) {
    throw UserError("hub.rpm.mask_granule_bytes", fmt::format("{} granules per entry; at most 64 are modelled",
                                                              r.entry_bytes / r.mask_granule_bytes));
  }
  if (r.timer_bypass < Time::zero()) throw UserError("hub.rpm.timer_bypass", "must not be negative");
}

void check_internode(const InternodeConfig& n, const RpmConfig& r) {
  if (n.merge && n.route == InternodeRoute::Direct) {
    throw UserError("hub.internode.merge", "merging needs the internode path: set hub.internode.route to nic or rail");
  }
  if (n.merge && n.merge_timeout <= Time::zero()) {
    throw UserError("hub.internode.merge_timeout", "must be positive when lines are merged");
  }
  if (n.merge && n.message_bytes < r.entry_bytes + n.descriptor_bytes) {
    throw UserError("hub.internode.message_bytes",
                    fmt::format("{} B cannot hold one {} B line and its {} B descriptor", n.message_bytes, r.entry_bytes,
                                n.descriptor_bytes));
  }
}

}  // namespace

void declare_hub_params(ParamRegistry& r) { hub_table().declare(r); }

HubConfig HubConfig::from(const Config& c) {
  HubConfig h;
  hub_table().read(c, h);
  h.aau.clock = h.rpm.clock = h.dam.clock = h.clock;
  h.area.sm_count = c.integer_u32("gpu.sm_count");  // declared by the GPU layer; the area counts its SMs
  check_aau(h.aau);
  check_rpm(h.rpm);
  check_internode(h.internode, h.rpm);
  return h;
}

}  // namespace moehub
