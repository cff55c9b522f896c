#pragma once
// Functional mode's companion of comet's timing program: real rows land in the dispatch
// buffers, pass the GEMM tiles, are reduced into per-owner partials and summed at their owner
// when the timing program's blocks store, compute and reduce them; checked against the
// reference layer. The timing program calls every step unconditionally; in a timing-only run
// it holds this class itself, whose steps do nothing.

#include <cstdint>
#include <memory>

#include "gpu/gemm.h"
#include "systems/comet/comet_plan.h"

namespace moehub {

class CometFunctional {
 public:
  // The companion of `cluster`'s run: one that moves rows when the run is functional.
  static std::unique_ptr<CometFunctional> make(Cluster& cluster, const CometPlan& plan);
  virtual ~CometFunctional() = default;

  virtual void row_in(int /*g*/, uint64_t /*pos*/) {}  // a dispatch row is complete in GPU g's buffer
  // A GEMM1 tile (its tile-row `tile_row` of the plan) or GEMM2 tile started its math.
  virtual void gemm1(int /*g*/, const gpu::GemmTile& /*tile*/, uint32_t /*tile_row*/) {}
  virtual void gemm2(int /*g*/, const gpu::GemmTile& /*tile*/) {}
  // The sender's weighted sum of a token's rows held on GPU g, stored under `code`.
  virtual void partial(int /*g*/, const CometCombineToken& /*tok*/, uint64_t /*code*/) {}
  virtual void partial_in(int /*owner*/, uint64_t /*code*/) {}  // every split of it landed
  virtual void outputs(int) {}  // the sum over the world partials of GPU g's tokens
};

}  // namespace moehub
