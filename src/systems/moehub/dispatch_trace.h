#pragma once
// Where a dispatched row's time goes (paper Fig. 6: producer- and consumer-side shares of the
// dispatch latency), measured from the run without changing it (no event, no simulated time):
//   producer side  store issued by the routing block -> its last data byte landed at the consumer
//                  (staging, RPM, egress queue, back-pressure, fabric, AAU, memory write);
//   tile assembly  landed -> every row of its GEMM1 M-tile landed (a partial tile: all rows of
//                  the GPU landed), waiting on rows that other stores still carry;
//   signal         tile complete -> its GEMM1 block may start: a polling block already on an SM
//                  sees the data at its next poll (a block that reaches its SM later sees it at
//                  its first); a DAM-gated block is released after the DAM's lookup;
//   SM wait        the rest until the block begins its math (mean over the tile's N-tile
//                  blocks): no SM was free (the compute backlog, not communication) -- for a
//                  polling block the time its tile was complete before the block got its SM,
//                  for a gated block from its release to its start.
// Per consumer GPU (Fig. 5): its rows, when the last one landed and their mean landing time.
// Besides, what polling holds on the consumer: the block-time GEMM1 blocks spend resident on an
// SM waiting for data (software polling only; DAM-gated blocks wait off the SMs) against the
// block-time they compute.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sim/time.h"

namespace moehub {

class DispatchTrace {
 public:
  // `rows`: RowIDs 0 .. rows - 1; `row_bytes`: data bytes per row; `bm`: rows per M-tile;
  // `blocks_per_tile`: GEMM1 N-tiles per M-tile.
  void reset(uint64_t rows, uint64_t row_bytes, uint64_t bm, uint64_t blocks_per_tile, size_t gpus);
  void add_regions(int g, size_t regions, uint64_t tiles_per_region);
  void issued(uint64_t row, Time now);
  void landed(int g, size_t region, uint64_t local_row, uint64_t row, uint64_t bytes, Time now);
  void all_arrived(int g, Time now);  // every row of GPU g landed: its partial tiles are complete
  void released(int g, size_t region, uint64_t tile, Time now);  // the DAM's Ready (or AllReady)
  // A block of the tile begins its math; `on_sm_since`: when a polling block took its SM.
  void tile_started(int g, size_t region, uint64_t tile, Time now, std::optional<Time> on_sm_since);
  void polled(Time resident_wait) { polling_ps_ += resident_wait.ps(); }
  void computed(Time busy) { compute_ps_ += busy.ps(); }
  nlohmann::json to_json() const;

 private:
  struct Tile {
    uint64_t rows = 0;            // rows whose data has completely landed
    int64_t landed_sum_ps = 0;    // sum of their landing times
    std::optional<Time> complete;
    std::optional<Time> released;
    int64_t signal_sum_ps = 0, sm_wait_sum_ps = 0;  // over its blocks that ran
    uint64_t starts = 0;
  };
  std::vector<int64_t> issued_ps_;      // per RowID; -1 until issued
  std::vector<uint32_t> landed_bytes_;  // per RowID
  std::vector<std::vector<std::vector<Tile>>> tiles_;  // [gpu][region][M-tile]
  struct Consumer {
    uint64_t rows = 0;
    int64_t landed_sum_ps = 0, last_ps = 0;
  };
  std::vector<Consumer> consumers_;
  uint64_t row_bytes_ = 0, bm_ = 1, blocks_per_tile_ = 1;
  uint64_t rows_landed_ = 0;
  int64_t producer_sum_ps_ = 0;
  int64_t polling_ps_ = 0, compute_ps_ = 0;
};

}  // namespace moehub
