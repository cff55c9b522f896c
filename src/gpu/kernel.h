#pragma once
// A kernel launch: a grid of thread blocks, the resources one block occupies on an SM, which
// SMs it may use, and the program every block runs.

#include <cstdint>
#include <memory>
#include <string>

#include "gpu/block_program.h"
#include "sim/callback.h"

namespace moehub::gpu {

// What one resident block holds on its SM; with the SM's limits it gives the occupancy.
struct BlockShape {
  uint32_t threads = 128;
  uint64_t shared_memory = 0;        // bytes
  uint32_t registers_per_thread = 0; // 32-bit registers
  uint32_t max_blocks_per_sm = 0;    // the kernel's own limit (e.g. __launch_bounds__); 0: none
};

// SMs [first, first + count); count 0 means every SM from `first` on.
struct SmRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

struct KernelSpec {
  std::string name;
  uint32_t blocks = 0;      // grid size; a grid of 0 blocks completes as soon as it starts
  bool persistent = false;  // grid = SMs in range x blocks resident per SM (blocks is ignored)
  BlockShape shape;
  SmRange sms;
  std::shared_ptr<BlockProgram> program;
  Callback on_done;  // runs when the last block has finished (before the stream moves on)
};

}  // namespace moehub::gpu
