#include "hub/hub_config.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {
namespace {

uint32_t u32(const Config& c, const char* key) { return c.integer_u32(key); }

}  // namespace

AauConfig AauConfig::from(const Config& c) {
  AauConfig a;
  a.clock = c.frequency("hub.clock");
  a.rat_entries = u32(c, "hub.rat.entries");
  a.rat_banks = u32(c, "hub.rat.banks");
  a.rat_ports_per_bank = u32(c, "hub.rat.ports_per_bank");
  a.rat_lookup_cycles = u32(c, "hub.rat.lookup_cycles");
  a.apt_entries = u32(c, "hub.apt.entries");
  a.apt_cycles = u32(c, "hub.apt.cycles");
  a.row_id_bits = u32(c, "hub.rat.row_id_bits");
  a.local_row_id_bits = u32(c, "hub.rat.local_row_id_bits");
  a.row_offset_bits = u32(c, "hub.rat.row_offset_bits");
  a.spill_entry_bytes = c.bytes("hub.rat.spill_entry_bytes");
  if (a.rat_banks > a.rat_entries) {
    throw UserError("hub.rat.banks", fmt::format("{} banks for {} entries: every bank needs an entry", a.rat_banks,
                                                 a.rat_entries));
  }
  return a;
}

RpmConfig RpmConfig::from(const Config& c) {
  RpmConfig r;
  r.clock = c.frequency("hub.clock");
  r.partitions = u32(c, "hub.rpm.partitions");
  r.entries_per_peer = u32(c, "hub.rpm.entries_per_peer");
  r.entry_bytes = static_cast<uint32_t>(c.bytes("hub.rpm.entry_bytes"));
  r.mask_granule_bytes = static_cast<uint32_t>(c.bytes("hub.rpm.mask_granule_bytes"));
  r.timer_bypass = c.time("hub.rpm.timer_bypass");
  r.issue_cycles = u32(c, "hub.rpm.issue_cycles");
  if (r.entry_bytes % r.mask_granule_bytes != 0) {
    throw UserError("hub.rpm.mask_granule_bytes",
                    fmt::format("{} B does not divide hub.rpm.entry_bytes ({} B)", r.mask_granule_bytes, r.entry_bytes));
  }
  if (r.entry_bytes / r.mask_granule_bytes > 64) {
    throw UserError("hub.rpm.mask_granule_bytes", fmt::format("{} granules per entry; at most 64 are modelled",
                                                              r.entry_bytes / r.mask_granule_bytes));
  }
  if (r.timer_bypass < Time::zero()) throw UserError("hub.rpm.timer_bypass", "must not be negative");
  return r;
}

DamConfig DamConfig::from(const Config& c) {
  DamConfig d;
  d.clock = c.frequency("hub.clock");
  d.table_entries = u32(c, "hub.dam.table_entries");
  d.counter_bits = u32(c, "hub.dam.counter_bits");
  d.global_counter_bits = u32(c, "hub.dam.global_counter_bits");
  d.lookup_cycles = u32(c, "hub.dam.lookup_cycles");
  return d;
}

AreaConfig AreaConfig::from(const Config& c) {
  AreaConfig a;
  a.technology_nm = u32(c, "hub.area.technology_nm");
  a.sram_mbit_per_mm2 = c.real("hub.area.sram_mbit_per_mm2");
  a.dual_port_factor = c.real("hub.area.dual_port_factor");
  a.cam_factor = c.real("hub.area.cam_factor");
  a.gpu_die_mm2 = c.real("hub.area.gpu_die_mm2");
  return a;
}

HubConfig HubConfig::from(const Config& c) {
  HubConfig h;
  h.address_bits = u32(c, "hub.address_bits");
  h.aau = AauConfig::from(c);
  h.rpm = RpmConfig::from(c);
  h.dam = DamConfig::from(c);
  h.area = AreaConfig::from(c);
  return h;
}

}  // namespace moehub
