#pragma once
// Where a thread block's stores to peer memory leave the GPU. The GPU bounds how fast an SM
// issues them (gpu.sm_store_bytes_per_clock); what happens next is the port's business: the
// systems layer wires it to the network (ordinary stores) or to the hub's Runtime Packet
// Manager. The GPU layer never depends on the network.

#include <cstdint>

#include "sim/callback.h"

namespace moehub::gpu {

struct StoreRequest {
  uint32_t src_gpu = 0;  // the issuing GPU
  uint32_t dst_gpu = 0;  // the GPU whose memory is written
  uint64_t bytes = 0;    // payload; the port splits it into packets
  uint64_t tag = 0;      // opaque to the GPU (e.g. a signal or row id the receiver acts on)
  uint32_t sm = 0;       // issuing SM
  uint64_t kernel = 0;   // issuing kernel's id
  uint32_t block = 0;    // issuing thread block's index in its grid
};

class StorePort {
 public:
  virtual ~StorePort() = default;
  // Takes the store and returns true, or refuses it (back-pressure), returns false and calls
  // `retry` exactly once when it can accept again; the GPU then offers the store again.
  // `retry` must not be called from inside try_store.
  virtual bool try_store(const StoreRequest& store, Callback retry) = 0;
};

// A thread block's remote read (Step::load): `bytes` of GPU `target_gpu`'s memory, read by
// `reader_gpu`. The port carries the requests and responses (the systems layer wires it to the
// network's read_request / read_response packets) and calls `arrived` once the last byte is in.
struct LoadRequest {
  uint32_t reader_gpu = 0;
  uint32_t target_gpu = 0;
  uint64_t bytes = 0;
  uint64_t tag = 0;  // opaque to the GPU
  uint32_t sm = 0;
  uint64_t kernel = 0;
  uint32_t block = 0;
};

class LoadPort {
 public:
  virtual ~LoadPort() = default;
  virtual void load(const LoadRequest& request, Callback arrived) = 0;
};

}  // namespace moehub::gpu
