#pragma once
// Functional mode's companion of deepep's timing program: real rows move through recv_x, the
// permuted and expert buffers and back through the combine rings when the timing program's
// kernels and ring chunks move them, and are checked against the reference layer. The timing
// program calls every step unconditionally; in a timing-only run it holds this class itself,
// whose steps do nothing.

#include <memory>

#include "platform/cluster.h"
#include "systems/deepep/deepep_plan.h"

namespace moehub {

class DeepEpFunctional {
 public:
  // The companion of `cluster`'s run: one that moves rows when the run is functional.
  static std::unique_ptr<DeepEpFunctional> make(Cluster& cluster, const DeepEpPlan& plan,
                                                const PerGpu<DeepEpExpertRows>& experts);
  virtual ~DeepEpFunctional() = default;

  virtual void input(int) {}  // GPU g's tokens in its input buffer
  // A dispatch receiver group of GPU g copied tokens [first, first + count) of (channel c,
  // src) from its ring into recv_x.
  virtual void dispatch_chunk(int /*g*/, int /*c*/, int /*src*/, int64_t /*first*/, int64_t /*count*/) {}
  virtual void permute(int) {}     // Megatron's permute to expert-major
  virtual void gemm1(int) {}
  virtual void activation(int) {}  // the weighted activation
  virtual void gemm2(int) {}
  virtual void unpermute(int) {}   // each received token's local expert rows summed
  // A combine receiver group of GPU g (the tokens' owner) took tokens [first, first + count)
  // of channel c back from expert rank `src`.
  virtual void combine_chunk(int /*g*/, int /*c*/, int /*src*/, int64_t /*first*/, int64_t /*count*/) {}
  virtual void output(int) {}      // GPU g's combined tokens are its layer output
};

}  // namespace moehub
