#pragma once
// Functional mode's companion of the ideal system: its layer has every input row where its
// expert runs, so a GPU's output is the reference computed through the two expert GEMM steps
// for its tokens. The timing program calls it unconditionally; in a timing-only run it holds
// this class itself, which does nothing.

#include <memory>

#include "platform/cluster.h"

namespace moehub {

class IdealFunctional {
 public:
  // The companion of `cluster`'s run: one that computes outputs when the run is functional.
  static std::unique_ptr<IdealFunctional> make(Cluster& cluster);
  virtual ~IdealFunctional() = default;

  virtual void outputs(int) {}  // GPU g's scaling ended: its tokens' outputs
};

}  // namespace moehub
