#pragma once
// Functional mode's companion of the moehub systems: real rows are assembled from the packet
// slices the hub lands (each dispatched row at its LocalRowID, each GEMM2 result at its
// combine slot), pass the expert GEMMs when their tiles run, and are summed by the scaling
// blocks; checked against the reference layer. The system calls every step unconditionally;
// in a timing-only run it holds this class itself, whose steps do nothing.

#include <cstdint>
#include <memory>
#include <vector>

#include "platform/cluster.h"
#include "systems/moehub/hub_fabric.h"

namespace moehub {

class MoeHubFunctional {
 public:
  // The companion of `cluster`'s run (regions of `capacity` rows of `row_bytes` data, GEMM
  // M-tiles of `bm` rows): one that moves rows when the run is functional.
  static std::unique_ptr<MoeHubFunctional> make(Cluster& cluster, uint64_t capacity, uint64_t row_bytes, uint32_t bm);
  virtual ~MoeHubFunctional() = default;

  // A slice of a dispatched row landed in local expert li's region at its LocalRowID.
  virtual void row_slice(int /*g*/, size_t /*li*/, const LandedWrite& /*w*/) {}
  // A slice of GEMM2's result landed in combine slot `slot` (local token x k + slot) of GPU g.
  virtual void combine_slice(int /*g*/, uint64_t /*slot*/, const LandedWrite& /*w*/) {}
  // M-tile m of local expert li (its first `rows` rows valid) starts GEMM1 / GEMM2; GEMM2's rows
  // go to the RowIDs the region's metadata column names (`source`, per LocalRowID).
  virtual void gemm1(int /*g*/, size_t /*li*/, uint64_t /*m*/, uint64_t /*rows*/) {}
  virtual void gemm2(int /*g*/, size_t /*li*/, uint64_t /*m*/, uint64_t /*rows*/, const std::vector<int64_t>& /*source*/) {}
  virtual void scaling(int /*g*/, int64_t /*first*/, int64_t /*last*/) {}  // local tokens [first, last)
};

}  // namespace moehub
