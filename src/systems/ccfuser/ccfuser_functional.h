#pragma once
// Functional mode's companion of ccfuser's timing program: real rows move through the
// symmetric input, the fetched blocks and the expert buffers, and results back to their
// source, when the timing program's thread blocks load, compute and store them; checked
// against the reference layer. The timing program calls every step unconditionally; in a
// timing-only run it holds this class itself, whose steps do nothing.

#include <cstdint>
#include <memory>

#include "systems/ccfuser/ccfuser_plan.h"

namespace moehub {

class CcfuserFunctional {
 public:
  // The companion of `cluster`'s run: one that moves rows when the run is functional.
  static std::unique_ptr<CcfuserFunctional> make(Cluster& cluster, const CcfuserPlan& plan, const CcfuserParams& params);
  virtual ~CcfuserFunctional() = default;

  virtual void scatter(int) {}  // local_scatter: GPU g's rows into its symmetric buffer
  virtual void fetched(int /*g*/, uint32_t /*block*/) {}  // a remote block's rows arrived by a get
  // Column tile `item` of GEMM1 (`which` 1) or GEMM2 (2) started its math on GPU g.
  virtual void math(int /*g*/, int /*which*/, const CcfuserItem& /*item*/) {}
  // Every result byte of block `code` is in its source GPU's buffer.
  virtual void results_landed(uint64_t /*code*/) {}
  virtual void outputs(int) {}  // local_gather and the weighting with the gate scores
};

}  // namespace moehub
