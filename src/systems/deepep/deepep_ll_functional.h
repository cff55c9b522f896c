#pragma once
// Functional mode's companion of deepep's low-latency path: rows move into packed_recv_x when a
// dispatch receiver copies a (local expert, source) slot range, the experts run on the packed
// rows, and the combine receivers reduce each token's top-k expert rows with its weights (read
// from the expert GPUs' buffers at that moment; an early read is flagged). A do-nothing base
// in timing-only runs.

#include <memory>

#include "platform/cluster.h"
#include "systems/deepep/deepep_low_latency.h"

namespace moehub {

class DeepEpLlFunctional {
 public:
  static std::unique_ptr<DeepEpLlFunctional> make(Cluster& cluster, const DeepEpLlPlan& plan);
  virtual ~DeepEpLlFunctional() = default;

  virtual void input(int) {}
  virtual void dispatch_recv(int /*g*/, int /*le*/, int /*src*/) {}
  virtual void gemm1(int) {}
  virtual void gemm2(int) {}
  virtual void combine_token(int /*g*/, int64_t /*t*/) {}
};

}  // namespace moehub
