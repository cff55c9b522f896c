#pragma once
// Functional mode's companion of tutel's timing program: real rows move through the padded
// capacity buffers, the chunked all-to-alls and the experts when the timing program's kernels
// and NCCL transfers move them, and are checked against the reference layer (which drops the
// same rows). The timing program calls every step unconditionally; in a timing-only run it
// holds this class itself, whose steps do nothing.

#include <memory>

#include "gpu/gemm.h"
#include "platform/cluster.h"
#include "systems/tutel/tutel_capacity.h"

namespace moehub {

class TutelFunctional {
 public:
  // The companion of `cluster`'s run (capacity dimension in chunks of `chunk` slots; `slots`
  // over the experts Tutel's gate routes, `r` = sharded_count, > 1 under parallel_type 'model'):
  // one that moves rows when the run is functional.
  static std::unique_ptr<TutelFunctional> make(Cluster& cluster, const TutelSlots& slots, int64_t chunk, int64_t r = 1);
  virtual ~TutelFunctional() = default;

  virtual void zero(int) {}                     // fast_encode's zeroed buffer
  virtual void encode(int /*g*/, int64_t /*slot*/) {}  // one scatter kernel per top-k slot
  // Chunk i of the scatter (s -> d) or gather (s: the expert side) all-to-all: read at the
  // start, written on delivery.
  virtual void scatter(int /*s*/, int /*d*/, int /*i*/, bool /*delivered*/) {}
  virtual void gather(int /*s*/, int /*d*/, int /*i*/, bool /*delivered*/) {}
  virtual void pre_permute(int /*g*/, int /*i*/) {}   // to the expert layout
  virtual void post_permute(int /*g*/, int /*i*/) {}  // back to the all-to-all layout
  // The hooks of GPU g's GEMM1 (`first`) or GEMM2 kernel of chunk i.
  virtual gpu::GemmHooks gemm_hooks(int /*g*/, int /*i*/, bool /*first*/) { return {}; }
  virtual void decode(int) {}  // fast_decode: each kept slot's row, weighted
  // parallel_type 'model' only (tutel_shards.h): the repeat copy; chunk i's fc2 bias all-gathered,
  // then scaled by 1 / r, then added to the GEMM2 output rows; the sum of the r partial outputs.
  virtual void repeat(int) {}
  virtual void bias_gathered(int /*g*/, int /*i*/) {}
  virtual void bias_scaled(int /*g*/, int /*i*/) {}
  virtual void fc2_bias_add(int /*g*/, int /*i*/) {}
  virtual void sum_shards(int) {}
};

}  // namespace moehub
