#pragma once
// What CCFuser's host computes after its count all-gather (docs/research/systems.md 6.1 steps
// 4-5, `divide_into_block` / `generate_kernel_paras`): every (local expert, source rank) row
// range cut into blocks of `block_rows`; blocks from the own rank are "local", the others
// "remote" (on an NVSwitch board every peer is remote, 6.4); the two lists interleaved as
// (local, remote) pairs while both last. From the pairs, the work items of the two fused
// kernels: a remote block's fetch (a get through the load path), then the local block's
// column tiles, then the remote block's column tiles.

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "moe/placement.h"
#include "platform/cluster.h"

namespace moehub {

struct CcfuserParams {
  enum class Schedule { WorkQueue, StaticPairs };
  Schedule schedule = Schedule::WorkQueue;
  int64_t block_rows = 64;
  int64_t tile_n = 512;
  int64_t tile_k = 32;
  int64_t block_threads = 256;
  Time host_plan_base;
  Time host_plan_per_block;
  int64_t plan_tensors = 7;
  static CcfuserParams from(const Config& config);
  static void declare(ParamRegistry& registry);
};

struct CcfuserBlock {
  int32_t expert = 0;
  int32_t local_expert = 0;
  int32_t source = 0;
  bool remote = false;
  uint32_t slot = 0;  // 64-row slot in merged_input / ffn1_out / the GEMM2 output
  std::vector<RowRef> rows;
};

struct CcfuserItem {
  enum class Kind : uint8_t { Fetch, Compute };
  Kind kind = Kind::Compute;
  uint32_t block = 0;
  uint32_t col = 0;  // column tile
};

struct CcfuserGpuPlan {
  std::vector<CcfuserBlock> blocks;  // in pair order: local_0, remote_0, local_1, remote_1, ...
  std::vector<std::vector<uint32_t>> pairs;
  std::vector<uint32_t> blocks_of_expert;  // per local expert (for the weight traffic share)
  std::vector<CcfuserItem> gemm1_items, gemm2_items;  // work-queue order
  std::vector<std::vector<uint32_t>> gemm1_by_pair, gemm2_by_pair;  // static order: item indices per CTA
  uint64_t code_base = 0;     // global number of this GPU's first block (store tags)
  uint64_t combine_bytes = 0; // result bytes this GPU's tokens get back
  uint64_t fetch_blocks = 0;
};

class CcfuserPlan {
 public:
  CcfuserPlan(Cluster& cluster, const CcfuserParams& params);
  const CcfuserGpuPlan& gpu(int g) const { return gpus_.at(g); }
  uint32_t tiles_n(uint64_t n) const { return static_cast<uint32_t>((n + tile_n_ - 1) / tile_n_); }
  // The holder GPU and block index of a global block code.
  std::pair<int, uint32_t> block_of_code(uint64_t code) const;

 private:
  PerGpu<CcfuserGpuPlan> gpus_;
  uint64_t tile_n_ = 512;
};

}  // namespace moehub
