#include "hub/hub_params.h"

namespace moehub {

void declare_hub_params(ParamRegistry& r) {
  r.frequency("hub.clock", "Clock of the hub's structures; hub latencies are counted in its cycles").positive();
  r.integer("hub.address_bits", "Width of a device address held in hub tables").range(16, 64).in_unit("bits");

  r.integer("hub.rat.entries", "Row Allocation Table entries ((MallocID, RowID) -> LocalRowID mappings cached)")
      .at_least(1).in_unit("entries");
  r.integer("hub.rat.banks", "Row Allocation Table banks (independent SRAM arrays)").at_least(1).in_unit("banks");
  r.integer("hub.rat.ports_per_bank", "Accesses one RAT bank serves per hub cycle").at_least(1).in_unit("ports");
  r.integer("hub.rat.lookup_cycles", "RAT access latency (lookup or fill)").at_least(0).in_unit("cycles");
  r.integer("hub.rat.row_id_bits", "Width of the RowID field of st.rowsp").range(1, 63).in_unit("bits");
  r.integer("hub.rat.local_row_id_bits", "Width of a LocalRowID (bounds a region's capacity)").range(1, 63).in_unit("bits");
  r.integer("hub.rat.row_offset_bits", "Width of the RowOffset field of st.rowsp (bounds a region's row size)")
      .range(1, 63).in_unit("bits");
  r.bytes("hub.rat.spill_entry_bytes", "Device-memory traffic of spilling or restoring one RAT mapping").positive();

  r.integer("hub.apt.entries", "Allocation Pointer Table entries (live rowspMalloc regions per GPU)")
      .range(1, 65536).in_unit("regions");
  r.integer("hub.apt.cycles", "APT lookup-and-increment latency").at_least(0).in_unit("cycles");

  r.integer("hub.rpm.partitions", "Remote-write buffer partitions (peers the RPM can serve)").range(1, 65536).in_unit("peers");
  r.integer("hub.rpm.entries_per_peer", "Remote-write buffer entries per peer partition").range(1, 1073741823).in_unit("entries");
  r.bytes("hub.rpm.entry_bytes", "Bytes one buffer entry (one packet payload) holds").positive();
  r.bytes("hub.rpm.mask_granule_bytes", "Bytes covered by one bit of an entry's validity mask").positive();
  r.time("hub.rpm.timer_bypass", "Age after which a partly merged entry is sent anyway (0ns: no bypass)");
  r.integer("hub.rpm.issue_cycles", "Hub cycles between two packets emitted by the scheduler").at_least(1).in_unit("cycles");

  r.integer("hub.dam.table_entries", "Dependency Table entries (address range -> TB group)").at_least(1).in_unit("entries");
  r.integer("hub.dam.counter_bits", "Width of a TB status counter and of its threshold").range(1, 63).in_unit("bits");
  r.integer("hub.dam.global_counter_bits", "Width of the global counter and its expected total").range(1, 63).in_unit("bits");
  r.integer("hub.dam.lookup_cycles", "Dependency Table range lookup and counter update latency").at_least(0).in_unit("cycles");

  r.integer("hub.area.technology_nm", "Technology node of the area estimate").positive().in_unit("nm");
  r.real("hub.area.sram_mbit_per_mm2", "Single-port SRAM macro density incl. periphery").positive().in_unit("Mbit/mm^2");
  r.real("hub.area.dual_port_factor", "Area per bit of dual-port SRAM relative to single-port").at_least(1).in_unit("ratio");
  r.real("hub.area.cam_factor", "Area per bit of binary CAM relative to single-port SRAM").at_least(1).in_unit("ratio");
  r.real("hub.area.gpu_die_mm2", "GPU die area the overhead is compared with").positive().in_unit("mm^2");
}

}  // namespace moehub
