#pragma once
// Private state of Gpu shared by gpu.cpp (dispatch) and gpu_blocks.cpp (block execution).

#include <deque>
#include <unordered_map>
#include <vector>

#include "gpu/gpu.h"

namespace moehub::gpu {

// Per-block flags of a kernel.
enum BlockFlag : uint8_t {
  kPreReleased = 1,   // release() came before the block reached its gate
  kRetired = 2,       // finished by retire() without running
  kGated = 4,         // parked at a Gate until release()
  kSignalParked = 8,  // parked in a Hardware wait on a signal
  kStarted = 16,      // has been resident
};

// Blocks released from a gate or a hardware wait, first in first out. A vector with a read
// index rather than a std::deque, which allocates a map and a 512-byte node as soon as it is
// constructed: every kernel a GPU enqueues holds one, most never used (FasterMoE enqueues about
// 28 kernels per step and GPU up front).
class BlockFifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  const BlockState& front() const { return items_[head_]; }
  void pop_front() {
    if (++head_ == items_.size()) clear();
  }
  void push_back(const BlockState& s) { items_.push_back(s); }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<BlockState> items_;
  size_t head_ = 0;
};

struct Gpu::Kernel {
  KernelId id = 0;
  KernelSpec spec;
  KernelTimes times;
  uint32_t blocks = 0;
  uint32_t sm_first = 0;
  uint32_t sm_count = 0;
  uint64_t registers_per_block = 0;
  bool active = false;
  bool done = false;
  Callback stream_done;

  // Dispatch state. Blocks are considered in index order; `head` is the next one whose first
  // step was fetched (not a gate) and is waiting for an SM.
  uint32_t next_block = 0;
  bool head_valid = false;
  BlockState head;
  Step head_step;
  BlockFifo released;  // released from a gate or hardware wait, dispatched first
  std::vector<uint8_t> flags;       // BlockFlag per block
  struct GatedBlock {
    BlockState state;
    Time since;  // when the dispatcher reached it (a poll-mode waiter would have started polling)
  };
  std::unordered_map<uint32_t, GatedBlock> gated;
  uint32_t finished = 0;
  uint32_t resident = 0;
  uint32_t parked = 0;
  std::vector<uint16_t> per_sm;  // resident blocks per SM, when the kernel limits them (from its start)

  // Timeline.
  std::vector<CoalescedSpan> run_spans;   // per SM group
  std::vector<CoalescedSpan> poll_spans;  // per SM group
  CoalescedSpan gate_span;
};

struct Gpu::Block {
  Kernel* kernel = nullptr;
  BlockState state;
  Step step;          // the wait or store in progress
  uint8_t joins = 0;  // outstanding halves of a ComputeMemory step
  SharedBandwidth::Ticket poll_load;  // the flag load in flight
};

}  // namespace moehub::gpu
