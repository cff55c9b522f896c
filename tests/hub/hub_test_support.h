#pragma once
// Shared fixtures of the hub tests: configs on a 1 GHz clock (one cycle = 1000 ps, so expected
// times are easy to compute by hand) and a device memory with a fixed latency.

#include <vector>

#include "hub/address_allocation_unit.h"
#include "hub/hub_config.h"
#include "sim/simulator.h"

namespace moehub::test {

inline AauConfig small_aau(uint32_t rat_entries, uint32_t banks = 1, uint32_t ports = 4) {
  AauConfig c;
  c.clock = Frequency::hertz(1000000000);
  c.rat_entries = rat_entries;
  c.rat_banks = banks;
  c.rat_ports_per_bank = ports;
  c.rat_lookup_cycles = 2;
  c.apt_entries = 8;
  c.apt_cycles = 1;
  c.row_id_bits = 32;
  c.local_row_id_bits = 20;
  c.row_offset_bits = 16;
  c.spill_entry_bytes = 32;
  return c;
}

// Device memory: every access completes `latency` after it is issued; the ops are recorded.
struct FakeMemory {
  Simulator& sim;
  Time latency;
  std::vector<MemoryOp> ops;
  MemoryAccess access() {
    return [this](MemoryOp op, uint64_t, Callback done) {
      ops.push_back(op);
      sim.schedule_in(latency, std::move(done));
    };
  }
  size_t count(MemoryOp op) const {
    size_t n = 0;
    for (MemoryOp o : ops) n += o == op;
    return n;
  }
};

}  // namespace moehub::test
