#pragma once
// Functional mode's companion of fastermoe's timing program: real rows move through the local
// scatter, the pairwise exchange, the experts and back when the timing program's kernels and
// NCCL transfers move them, and are checked against the reference layer. The timing program
// calls every step unconditionally; in a timing-only run it holds this class itself, whose
// steps do nothing.

#include <memory>

#include "gpu/gemm.h"
#include "platform/cluster.h"
#include "systems/fastermoe/fastermoe_layout.h"

namespace moehub {

class FasterMoeFunctional {
 public:
  // The companion of `cluster`'s run: one that moves rows when the run is functional.
  static std::unique_ptr<FasterMoeFunctional> make(Cluster& cluster, const FasterMoeLayout& layout);
  virtual ~FasterMoeFunctional() = default;

  virtual void local_scatter(int) {}  // T*k rows into expert order (index_select by pos)
  // An exchange of src's rows for dst's ei-th local expert (dispatch) or of their outputs back
  // (combine: src is the expert side): rows are read when the transfer starts and written on
  // delivery.
  virtual void exchange(int /*src*/, int /*dst*/, int /*ei*/, bool /*delivered*/, bool /*combine*/) {}
  // The hooks of GPU g's GEMM1 (`first`) or GEMM2 kernel over rows from `base` of local expert ei.
  virtual gpu::GemmHooks gemm_hooks(int /*g*/, int /*ei*/, int64_t /*base*/, bool /*first*/) { return {}; }
  virtual void output_copy(int /*g*/, int64_t /*base*/, int64_t /*count*/) {}  // y.copy_(y0)
  virtual void local_gather(int) {}  // back to (token, slot) order
  virtual void scaling(int) {}       // the gate-weighted sum
};

}  // namespace moehub
