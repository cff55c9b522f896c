#pragma once
// What a thread block does: a program that hands the GPU one step at a time. A program is
// shared by every block of a kernel; per-block state lives in BlockState. Steps cost nothing
// to build (a few words), so a kernel of hundreds of thousands of blocks is cheap.

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/callback.h"
#include "sim/time.h"

namespace moehub::gpu {

using SignalId = uint32_t;
using KernelId = uint64_t;

enum class WaitMode : uint8_t {
  // The block is resident (holds its SM slot) and loads the signal every poll interval; each
  // load is memory traffic; it sees the data at the first poll that completes after it lands.
  Poll,
  // The block is not resident until the signal reaches the threshold (the DAM's mode). Only
  // valid as a block's first step: waiting happens before the block is dispatched.
  Hardware,
};

struct Step {
  enum class Kind : uint8_t {
    Compute,        // occupy the block for `duration`
    Memory,         // move `bytes` through the GPU's shared memory bandwidth
    ComputeMemory,  // both at once (e.g. a pipelined GEMM tile); ends when both have ended
    Wait,           // until signal >= threshold, in `mode`
    Gate,           // first step only: not dispatched until Gpu::release() (or retire())
    Store,          // `bytes` to `dst_gpu` through the SM's load/store unit and the StorePort
    Load,           // `bytes` from peer `dst_gpu`'s memory through the LoadPort; blocks until they arrive
    SignalAdd,      // add `value` to a local signal (a local flag store), no time
    Done,           // the block finishes
  };
  Kind kind = Kind::Done;
  WaitMode mode = WaitMode::Poll;
  uint32_t dst_gpu = 0;
  SignalId signal = 0;
  int64_t value = 0;  // wait threshold or signal increment
  uint64_t bytes = 0;
  uint64_t tag = 0;
  Time duration;

  static Step compute(Time d) { Step s; s.kind = Kind::Compute; s.duration = d; return s; }
  static Step memory(uint64_t bytes) { Step s; s.kind = Kind::Memory; s.bytes = bytes; return s; }
  static Step compute_memory(Time d, uint64_t bytes) {
    Step s; s.kind = Kind::ComputeMemory; s.duration = d; s.bytes = bytes; return s;
  }
  static Step wait(SignalId signal, int64_t threshold, WaitMode mode) {
    Step s; s.kind = Kind::Wait; s.signal = signal; s.value = threshold; s.mode = mode; return s;
  }
  static Step gate() { Step s; s.kind = Kind::Gate; return s; }
  static Step store(uint32_t dst_gpu, uint64_t bytes, uint64_t tag) {
    Step s; s.kind = Kind::Store; s.dst_gpu = dst_gpu; s.bytes = bytes; s.tag = tag; return s;
  }
  // A remote read by the block's threads (e.g. an NVSHMEM get over NVLink P2P): the requests
  // leave through the SM's load/store unit, the block waits (resident, no polling) until the
  // last byte has arrived. `dst_gpu` is the GPU read from.
  static Step load(uint32_t src_gpu, uint64_t bytes, uint64_t tag) {
    Step s; s.kind = Kind::Load; s.dst_gpu = src_gpu; s.bytes = bytes; s.tag = tag; return s;
  }
  static Step signal_add(SignalId signal, int64_t delta) {
    Step s; s.kind = Kind::SignalAdd; s.signal = signal; s.value = delta; return s;
  }
  static Step done() { return Step{}; }
};

// Per-block state handed to the program. `step` counts the steps already returned; `sm` is
// -1 while the block is not resident (its first step is fetched before dispatch, so that a
// Hardware wait or a Gate keeps it off the SMs). `user` is free for the program (e.g. the
// work item of a persistent block).
struct BlockState {
  KernelId kernel = 0;
  uint32_t block = 0;
  uint32_t step = 0;
  int32_t sm = -1;
  uint64_t user = 0;
};

class BlockProgram {
 public:
  virtual ~BlockProgram() = default;
  virtual Step next(BlockState& block) = 0;
};

// Every block runs the same steps in order, `repeat` times (a persistent loop).
class StepListProgram final : public BlockProgram {
 public:
  explicit StepListProgram(std::vector<Step> steps, uint32_t repeat = 1);
  Step next(BlockState& block) override;

 private:
  std::vector<Step> steps_;
  uint32_t repeat_;
};

// Any program written as a function of the block's state.
class FunctionProgram final : public BlockProgram {
 public:
  explicit FunctionProgram(UniqueFunction<Step(BlockState&)> fn) : fn_(std::move(fn)) {}
  Step next(BlockState& block) override { return fn_(block); }

 private:
  UniqueFunction<Step(BlockState&)> fn_;
};

}  // namespace moehub::gpu
