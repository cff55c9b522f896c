#pragma once
// What crosses the RPM's boundaries: stores entering from the SMs and packets leaving for the
// network, and the port the network offers at this GPU's egress.

#include <cstdint>

#include "hub/rowsp.h"
#include "sim/callback.h"
#include "sim/time.h"

namespace moehub {

// A store leaving an SM toward a peer GPU: an ordinary remote st. or a st.rowsp.
struct RemoteStore {
  bool rowsp = false;
  bool nop = false;          // .nop: non-critical priority class
  uint64_t address = 0;      // st.: destination device address
  MallocId malloc_id;        // st.rowsp fields
  uint64_t row_id = 0;
  uint64_t row_offset = 0;
  uint32_t bytes = 0;

  static RemoteStore plain(uint64_t address, uint32_t bytes, bool nop = false) {
    RemoteStore s;
    s.address = address;
    s.bytes = bytes;
    s.nop = nop;
    return s;
  }
  static RemoteStore from(const RowspStore& r) {
    RemoteStore s;
    s.rowsp = true;
    s.nop = r.nop;
    s.malloc_id = r.malloc_id;
    s.row_id = r.row_id;
    s.row_offset = r.row_offset;
    s.bytes = r.bytes;
    return s;
  }
};

// One packet the RPM emits: the merged contents of one buffer entry (one line of `entry_bytes`).
struct HubPacket {
  uint32_t peer = 0;            // destination GPU (the partition it came from)
  bool rowsp = false;
  bool nop = false;
  uint64_t address = 0;         // st.: line-aligned destination address
  MallocId malloc_id;           // st.rowsp: region, row and the RowOffset of the line's start
  uint64_t row_id = 0;
  uint64_t row_offset = 0;
  uint64_t valid_mask = 0;      // bit i: granule i of the line carries data
  uint32_t granule_bytes = 0;
  uint32_t payload_bytes = 0;   // popcount(valid_mask) * granule_bytes
  uint32_t stores_merged = 0;   // stores (or store pieces) that built it
  Time first_store = Time::zero();
  bool timer_bypass = false;    // left partly merged because its timer expired
  bool flushed = false;         // left partly merged because of a flush
  // hub.flow_line_runs: the packet stands for this many whole lines, back to back from its
  // address or RowOffset (payload_bytes counts them all; valid_mask is each line's).
  uint32_t lines = 1;
};

// The network's egress port of this GPU, as the RPM sees it.
class PacketPort {
 public:
  virtual ~PacketPort() = default;
  // Whether a packet of `payload_bytes` to `peer` would be accepted now (what try_send would
  // answer, without building the packet).
  virtual bool can_send(uint32_t peer, uint32_t payload_bytes) const = 0;
  // (For a run of lines, payload_bytes is one line's: a run is offered when its first line
  // would be accepted.)
  // Offers one packet; false means refused (back-pressure), nothing was taken.
  virtual bool try_send(const HubPacket& packet) = 0;
  // After a refusal for `peer`: the port calls `ready` once, when a packet to `peer` may be
  // accepted again.
  virtual void notify_when_ready(uint32_t peer, Callback ready) = 0;
  // True if no packet of `payload_bytes`, to any peer, would be accepted now, and room for one
  // comes only with a notify_when_ready callback, for any peer (one queue for every peer).
  // False where the port cannot say so.
  virtual bool accepts_nothing(uint32_t payload_bytes) const {
    (void)payload_bytes;
    return false;
  }
};

}  // namespace moehub
