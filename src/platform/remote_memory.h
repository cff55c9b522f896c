#pragma once
// Remote memory access for the fine-grained overlap systems (comet, ccfuser): reads of peer
// memory as read_request / read_response packets, and writes whose tag names a buffer element
// as well as a signal, so a system learns when a particular row (or slice) has fully landed.
//
// Reads: the reader cuts a read into requests of at most net.max_payload_bytes of response
// each; a request is a header-only packet (request class) to the target; the target reads the
// bytes from its memory (shared HBM) and returns them as one read_response packet (response
// class); the reader writes them into its memory and, once the last byte is in, the read is
// complete. A target whose response FIFO is full refuses further requests at its ingress
// (back-pressure) until its queued responses have left. The flow fidelity has no packets: a
// read is then a flow from the target to the reader.
//
// Tagged writes: tag = (code + 1) << 32 | signal_tag. The receiver writes the bytes into
// memory, bumps the signal, then reports (gpu, code, bytes) to the system.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "gpu/store_port.h"
#include "net/packet.h"
#include "sim/callback.h"
#include "sim/per_gpu.h"

namespace moehub {

class Cluster;

class RemoteMemory {
 public:
  // Installs a receiver and a load port on every GPU of the cluster.
  explicit RemoteMemory(Cluster& cluster);
  ~RemoteMemory();
  RemoteMemory(const RemoteMemory&) = delete;
  RemoteMemory& operator=(const RemoteMemory&) = delete;

  // A tag for Step::store: bumps `signal` at the destination and reports `code` (< 2^31).
  static uint64_t tag(uint32_t signal, uint64_t code) { return ((code + 1) << 32) | (static_cast<uint64_t>(signal) + 1); }
  // Called when a tagged write's bytes are in the destination's memory.
  void on_write(std::function<void(int gpu, uint64_t code, uint64_t bytes)> fn) { on_write_ = std::move(fn); }

  // `reader` reads `bytes` of `target`'s memory (not from a thread block: e.g. a copy engine).
  void read(int reader, int target, uint64_t bytes, Callback done);

  uint64_t reads() const { return reads_; }
  uint64_t read_bytes() const { return read_bytes_; }

 private:
  class Port;
  friend class Port;
  struct Read {
    uint64_t bytes_left = 0;
    Callback done;
  };
  void response_in(int reader, uint64_t read_id, uint64_t bytes);

  Cluster& cluster_;
  PerGpu<std::unique_ptr<Port>> ports_;
  std::unordered_map<uint64_t, Read> reads_in_flight_;
  uint64_t next_read_ = 1;
  uint64_t reads_ = 0;
  uint64_t read_bytes_ = 0;
  std::function<void(int, uint64_t, uint64_t)> on_write_;
};

}  // namespace moehub
