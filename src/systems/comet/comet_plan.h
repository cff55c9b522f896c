#pragma once
// What Comet's host computes after the count exchange (docs/research/systems.md 5.2 step 6,
// 5.3): the dispatch layout of every GPU (per local expert, rows grouped by source in the
// order own rank first, then ring order), the GEMM1 tile-rows and their flags, the tile
// schedule (tiles that need the fewest remote sources first), each sender's row jobs for its
// communication blocks, the number of communication blocks (adaptive rule), layer1's column
// splits and each GPU's combine work (the tokens whose rows it holds, with their owners).

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <memory>
#include <utility>
#include <vector>

#include "config/config.h"
#include "gpu/gemm.h"
#include "platform/cluster.h"

namespace moehub {

struct CometParams {
  enum class Dispatch { CommBlocks, CopyEngineGets };
  Dispatch dispatch = Dispatch::CommBlocks;
  int64_t comm_blocks = 0;  // 0: adaptive
  int64_t gather_rs_ctas = 28;
  int64_t column_splits = 8;
  Time layout_host_time;
  Time gather_rs_host_time;
  static CometParams from(const Config& config);
  static void declare(ParamRegistry& registry);
};

// Codes of comet's stores (RemoteMemory tags): below kCometCombineCode a dispatch row's
// position in its destination's buffer; from it up a combine partial's (token, sending GPU).
constexpr uint64_t kCometCombineCode = uint64_t{1} << 30;
inline uint64_t comet_partial_code(int64_t token, int src, int gpus) {
  return kCometCombineCode + static_cast<uint64_t>(token) * static_cast<uint64_t>(gpus) + static_cast<uint64_t>(src);
}

struct CometRow {  // one row of a GPU's dispatch buffer
  int64_t token = 0;
  int32_t slot = 0;
  int32_t source = 0;
};

struct CometJob {  // one row a sender's communication blocks move
  int dst = 0;
  uint64_t pos = 0;  // in dst's dispatch buffer
};

struct CometCombineToken {  // a token whose expert rows this GPU holds
  int owner = 0;
  int64_t token = 0;
  std::vector<std::pair<uint64_t, float>> rows;  // dispatch-buffer row, routing weight
};

struct CometGpuPlan {
  std::vector<int32_t> experts;  // local experts (global ids), GEMM group order
  std::vector<CometRow> rows;    // expert-major, then source distance, then token order
  std::vector<uint64_t> rows_per_expert;
  PerGpu<std::vector<uint64_t>> rows_from_source;
  std::unique_ptr<gpu::GemmModel> gemm1, gemm2;
  std::vector<uint32_t> tile_row_base;  // per local expert: its first tile-row
  std::vector<uint64_t> tile_first_row;  // per tile-row
  std::vector<uint64_t> tile_bytes;      // valid rows x row bytes
  std::vector<uint32_t> tile_max_distance;
  std::vector<gpu::SignalId> tile_flags;
  std::vector<uint32_t> row_tile;  // per dispatch-buffer row
  PerGpu<gpu::SignalId> source_flags;  // flux barrier[src]
  std::vector<uint32_t> gemm1_order, gemm2_order;
  std::vector<gpu::SignalId> split_flags;
  std::vector<int64_t> split_tiles;
  std::vector<CometJob> jobs;  // as a sender, in send order
  uint32_t comm_blocks = 0;
  std::vector<CometCombineToken> combine_tokens;
  gpu::SignalId combine_signal = 0;
  gpu::SignalId gets_done = 0;  // copy-engine gets completed (flux all_gather_event)
  uint64_t partials_expected = 0;  // partial rows this GPU's tokens receive, its own included
  uint64_t plan_bytes = 0;         // H2D of the layout and schedule
};

class CometPlan {
 public:
  CometPlan(Cluster& cluster, const CometParams& params);
  const CometGpuPlan& gpu(int g) const { return gpus_.at(g); }
  // The fused kernels' block: the grouped GEMM's (gpu.gemm_threads_per_block, gpu.gemm_blocks_per_sm).
  gpu::BlockShape fused_shape() const { return shape_; }
  uint32_t splits() const { return splits_; }
  uint64_t split_cols(uint32_t s) const;
  // The column splits [first, last] a GEMM2 tile overlaps.
  std::pair<uint32_t, uint32_t> splits_of(const gpu::GemmTile& t) const;
  // The GPUs holding at least one of the token's experts.
  const std::vector<int>& sources_of_token(int64_t token) const { return token_sources_.at(static_cast<size_t>(token)); }
  // A dense index for the partial of `token` from GPU `src` (one of its sources), in [0, partials()):
  // the token's first partial plus src's place among its sorted sources.
  uint64_t partial_index(int64_t token, int src) const {
    const std::vector<int>& s = token_sources_[static_cast<size_t>(token)];
    const auto it = std::lower_bound(s.begin(), s.end(), src);
    if (it == s.end() || *it != src) throw std::logic_error("CometPlan: a partial from a GPU that holds none of the token's rows");
    return first_partial_[static_cast<size_t>(token)] + static_cast<uint64_t>(it - s.begin());
  }
  uint64_t partials() const { return first_partial_.empty() ? 0 : first_partial_.back(); }

  // The adaptive rule: the n in [1, SMs - 1] minimising max(send time on n blocks, GEMM1 time
  // on the other SMs); ties go to the smaller n.
  static uint32_t adaptive_comm_blocks(uint64_t remote_bytes, uint64_t local_bytes, uint64_t gemm1_tiles,
                                       Time tile_time, const gpu::GpuConfig& gpu, Bandwidth link);

 private:
  void layout(Cluster& cluster, int d);
  void schedule_gemms(Cluster& cluster, int d);
  void sender_jobs(Cluster& cluster, const CometParams& params, int s);
  void combine_work(Cluster& cluster, int g);

  PerGpu<CometGpuPlan> gpus_;
  std::vector<std::vector<int>> token_sources_;
  std::vector<uint64_t> first_partial_;  // per token, then the total: prefix sums of the sources' counts
  gpu::BlockShape shape_;
  uint32_t splits_ = 1;
  uint64_t hidden_ = 0;
  uint64_t tile_n_ = 1;
};

}  // namespace moehub
