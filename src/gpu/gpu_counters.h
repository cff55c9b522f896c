#pragma once
// A GPU's counters (kernels, thread blocks, polls, stores and loads its blocks issued), each
// declared once with its unit; systems sum them by member, the report writes them by key.

#include <cstdint>

#include "sim/counters.h"

namespace moehub::gpu {

struct GpuCounters {
  uint64_t kernels = 0;
  uint64_t blocks_run = 0;
  uint64_t blocks_retired = 0;
  uint64_t polls = 0;
  uint64_t hardware_waits = 0;
  uint64_t poll_loads_avoided = 0;
  uint64_t stores = 0;
  uint64_t store_bytes = 0;
  uint64_t loads = 0;
  uint64_t load_bytes = 0;
  uint64_t store_refusals = 0;

  static const CounterTable<GpuCounters>& table() {
    using S = GpuCounters;
    static const CounterTable<S> t{
        {"kernels", "kernels", "kernels completed", &S::kernels},
        {"blocks_run", "blocks", "thread blocks started on an SM", &S::blocks_run},
        {"blocks_retired", "blocks", "blocks retired without running (a DAM retired their group)", &S::blocks_retired},
        {"polls", "loads", "flag loads by blocks polling in software", &S::polls},
        {"hardware_waits", "waits", "waits a block left to the hardware (DAM) instead of polling", &S::hardware_waits},
        {"poll_loads_avoided", "loads", "flag loads those waits would have issued polling", &S::poll_loads_avoided},
        {"stores", "stores", "stores blocks issued to peers", &S::stores},
        {"store_bytes", "B", "bytes of those stores", &S::store_bytes},
        {"loads", "loads", "loads blocks issued to peers", &S::loads},
        {"load_bytes", "B", "bytes of those loads", &S::load_bytes},
        {"store_refusals", "stores", "stores refused by a full store port (retried)", &S::store_refusals}};
    return t;
  }
};

}  // namespace moehub::gpu
