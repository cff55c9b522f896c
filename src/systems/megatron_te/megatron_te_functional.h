#pragma once
// Functional mode's companion of megatron-te's timing program: real rows move between the
// dispatcher's buffers when the timing program's kernels and NCCL transfers move them, and
// are checked against the reference layer. The timing program calls every step
// unconditionally; in a timing-only run it holds this class itself, whose steps do nothing.

#include <memory>

#include "platform/cluster.h"
#include "systems/megatron_te/megatron_te_layout.h"

namespace moehub {

class MegatronTeFunctional {
 public:
  // The companion of `cluster`'s run: one that moves rows when the run is functional.
  static std::unique_ptr<MegatronTeFunctional> make(Cluster& cluster, const PerGpu<MegatronLayout>& layouts);
  virtual ~MegatronTeFunctional() = default;

  virtual void input(int) {}         // GPU g's tokens in its input buffer
  virtual void permute1(int) {}      // permutation 1: rows and probs to perm order
  virtual void dispatch_landed(int, int) {}  // (src, dst) of the rows' all-to-all
  virtual void probs_landed(int, int) {}     // (src, dst) of the probs' all-to-all
  virtual void gather_landed(int, int) {}    // (src, dst) of the TP all-gather of the rows (EP+TP)
  virtual void gather_probs_landed(int, int) {}  // ... and of the probs
  virtual void sort(int) {}          // sort_chunks_by_idxs of the rows
  virtual void sort_probs(int) {}    // ... and of the probs
  virtual void gemm1(int) {}         // TE's grouped fc1 (and the activation's input)
  virtual void activation(int) {}    // the weighted activation
  virtual void gemm2(int) {}         // TE's grouped fc2
  virtual void unsort(int) {}        // unsort_chunks back to source-major
  virtual void reduce_scattered(int) {}  // g's part of the TP reduce-scatter has landed (EP+TP)
  virtual void combine_landed(int, int) {}  // (expert side, token side) of the combine all-to-all
  virtual void unpermute(int) {}     // unpermute: each token's k rows summed into its output
};

}  // namespace moehub
