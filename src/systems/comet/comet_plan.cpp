#include "systems/comet/comet_plan.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "config/param_table.h"
#include "sim/error.h"
#include "platform/shared_kernels.h"

namespace moehub {

namespace {
constexpr uint64_t kAddressBytes = 8;         // one destination address per row sent
constexpr uint64_t kScheduleEntryBytes = 20;  // flux ProblemSchedule: expert, m_start, m_end, source range (5 x int32)
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
}  // namespace

namespace {

ParamTable<CometParams> comet_table() {
  using P = CometParams;
  ParamTable<P> t;
  t.choice("systems.comet.dispatch", &P::dispatch,
           std::vector<std::pair<std::string, P::Dispatch>>{{"comm_blocks", P::Dispatch::CommBlocks},
                                                            {"copy_engine_gets", P::Dispatch::CopyEngineGets}},
           "Layer0 data movement: specialised communication blocks pushing rows (paper) or copy-engine gets of whole "
           "token shards (flux code)");
  t.integer("systems.comet.comm_blocks", &P::comm_blocks,
            "Layer0 communication blocks (one per SM); 0: the adaptive rule (docs/systems/comet.md)")
      .at_least(0)
      .at_most(1024)
      .in_unit("blocks");
  t.integer("systems.comet.gather_rs_ctas", &P::gather_rs_ctas, "Layer1 communication blocks doing the top-k reduce and scatter")
      .at_least(1)
      .at_most(1024)
      .in_unit("blocks");
  t.integer("systems.comet.column_splits", &P::column_splits, "Layer1 GEMM2 column splits, each with its own flag")
      .at_least(1)
      .at_most(65536)
      .in_unit("splits");
  t.time("systems.comet.layout_host_time", &P::layout_host_time, "Host work after the count sync: layout and tile schedule");
  t.time("systems.comet.gather_rs_host_time", &P::gather_rs_host_time,
         "Host work building layer1's grouped-GEMM problems and argument arrays");
  return t;
}

}  // namespace

void CometParams::declare(ParamRegistry& r) { comet_table().declare(r); }

CometParams CometParams::from(const Config& c) {
  CometParams p;
  comet_table().read(c, p);
  return p;
}

CometPlan::CometPlan(Cluster& cluster, const CometParams& params) {
  const gpu::GpuConfig& gc = cluster.gpu_config();
  shape_.threads = gc.gemm_threads_per_block;
  shape_.max_blocks_per_sm = gc.gemm_blocks_per_sm;
  hidden_ = static_cast<uint64_t>(cluster.model().hidden);
  tile_n_ = gc.gemm_tile.n;
  if (params.gather_rs_ctas >= static_cast<int64_t>(gc.sm_count)) {
    throw UserError("systems.comet.gather_rs_ctas", fmt::format("{} leaves no SM of {} for GEMM2", params.gather_rs_ctas, gc.sm_count));
  }
  if (params.comm_blocks >= static_cast<int64_t>(gc.sm_count)) {
    throw UserError("systems.comet.comm_blocks", fmt::format("{} leaves no SM of {} for GEMM1", params.comm_blocks, gc.sm_count));
  }
  if (static_cast<uint64_t>(params.column_splits) > hidden_) {
    throw UserError("systems.comet.column_splits", fmt::format("{} splits exceed the {} hidden columns", params.column_splits, hidden_));
  }
  splits_ = static_cast<uint32_t>(params.column_splits);
  const Workload& w = cluster.workload();
  token_sources_.resize(static_cast<size_t>(w.routing().tokens()));
  for (int64_t t = 0; t < w.routing().tokens(); ++t) {
    auto& s = token_sources_[static_cast<size_t>(t)];
    for (int64_t j = 0; j < w.routing().top_k(); ++j) s.push_back(w.placement().gpu_of_expert(w.routing().expert(t, j)));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  first_partial_.reserve(token_sources_.size() + 1);
  first_partial_.push_back(0);
  for (const std::vector<int>& s : token_sources_) first_partial_.push_back(first_partial_.back() + s.size());
  gpus_.resize(cluster.gpus());
  for (int g = 0; g < cluster.gpus(); ++g) layout(cluster, g);
  for (int g = 0; g < cluster.gpus(); ++g) schedule_gemms(cluster, g);
  for (int g = 0; g < cluster.gpus(); ++g) sender_jobs(cluster, params, g);
  for (int g = 0; g < cluster.gpus(); ++g) combine_work(cluster, g);
}

void CometPlan::layout(Cluster& cluster, int d) {
  const Workload& w = cluster.workload();
  const int n = cluster.gpus();
  CometGpuPlan& p = gpus_[d];
  p.experts = w.placement().local_experts(d);
  p.rows_from_source.assign(n, {});
  const uint64_t bm = cluster.gpu_config().gemm_tile.m;
  const uint64_t rb = cluster.model().row_bytes();
  gpu::Gpu& dev = cluster.gpu(d);
  for (size_t li = 0; li < p.experts.size(); ++li) {
    // Rows of the expert bucketed by source GPU, in token order within a source.
    PerGpu<std::vector<RowRef>> by_source(n);
    for (const RowRef& r : w.plan().expert_rows(p.experts[li])) by_source[static_cast<int>(w.tokens().gpu_of_token(r.token))].push_back(r);
    const uint64_t first = p.rows.size();
    std::vector<uint32_t> distance_of_row;
    for (int j = 0; j < n; ++j) {  // own rank first, then ring order
      const int s = (d + j) % n;
      for (const RowRef& r : by_source[s]) {
        p.rows_from_source[s].push_back(p.rows.size());
        p.rows.push_back({r.token, r.slot, s});
        distance_of_row.push_back(static_cast<uint32_t>(j));
      }
    }
    const uint64_t rows_e = p.rows.size() - first;
    p.rows_per_expert.push_back(rows_e);
    p.tile_row_base.push_back(static_cast<uint32_t>(p.tile_first_row.size()));
    for (uint64_t r = 0; r < ceil_div(rows_e, bm); ++r) {
      const uint64_t valid = std::min(bm, rows_e - r * bm);
      p.tile_first_row.push_back(first + r * bm);
      p.tile_bytes.push_back(valid * rb);
      p.tile_max_distance.push_back(distance_of_row[r * bm + valid - 1]);
      p.tile_flags.push_back(dev.create_signal(fmt::format("comet tile flag e{} r{}", p.experts[li], r)));
      for (uint64_t i = 0; i < valid; ++i) p.row_tile.push_back(static_cast<uint32_t>(p.tile_flags.size() - 1));
    }
  }
  for (int s = 0; s < n; ++s) p.source_flags.push_back(dev.create_signal(fmt::format("comet barrier[{}]", s)));
  for (uint32_t s = 0; s < splits_; ++s) p.split_flags.push_back(dev.create_signal(fmt::format("comet split flag {}", s)));
  p.combine_signal = dev.create_signal("comet combine partials in");
  p.gets_done = dev.create_signal("comet gets done");
}

void CometPlan::schedule_gemms(Cluster& cluster, int d) {
  CometGpuPlan& p = gpus_[d];
  if (p.experts.empty()) return;
  SharedKernels k(cluster);
  const std::vector<uint64_t>& rows_e = p.rows_per_expert;
  p.gemm1 = std::make_unique<gpu::GemmModel>(k.gemm1_model(rows_e));
  p.gemm2 = std::make_unique<gpu::GemmModel>(k.gemm2_model(rows_e));
  // GEMM1: tiles needing only the own rank's rows first, then by the farthest source they need.
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> keys;  // (distance, tile-row, index)
  for (uint64_t i = 0; i < p.gemm1->tiles(); ++i) {
    const gpu::GemmTile t = p.gemm1->tile(i);
    const uint32_t tr = p.tile_row_base[t.group] + static_cast<uint32_t>(t.tile_row);
    keys.emplace_back(p.tile_max_distance[tr], tr, static_cast<uint32_t>(i));
  }
  std::stable_sort(keys.begin(), keys.end());
  for (const auto& key : keys) p.gemm1_order.push_back(std::get<2>(key));
  // GEMM2: column splits in order, so that split flags complete one after another.
  p.split_tiles.assign(splits_, 0);
  std::vector<std::pair<uint32_t, uint32_t>> keys2;
  for (uint64_t i = 0; i < p.gemm2->tiles(); ++i) {
    const auto [first, last] = splits_of(p.gemm2->tile(i));
    for (uint32_t s = first; s <= last; ++s) ++p.split_tiles[s];
    keys2.emplace_back(first, static_cast<uint32_t>(i));
  }
  std::stable_sort(keys2.begin(), keys2.end());
  for (const auto& key : keys2) p.gemm2_order.push_back(key.second);
}

uint64_t CometPlan::split_cols(uint32_t s) const {
  const uint64_t per = ceil_div(hidden_, splits_);
  const uint64_t begin = std::min<uint64_t>(hidden_, s * per);
  return std::min<uint64_t>(hidden_, begin + per) - begin;
}

std::pair<uint32_t, uint32_t> CometPlan::splits_of(const gpu::GemmTile& t) const {
  const uint64_t per = ceil_div(hidden_, splits_);
  const uint64_t first_col = t.tile_col * tile_n_;
  const uint64_t last_col = first_col + t.cols - 1;
  return {static_cast<uint32_t>(first_col / per), static_cast<uint32_t>(last_col / per)};
}

uint32_t CometPlan::adaptive_comm_blocks(uint64_t remote_bytes, uint64_t local_bytes, uint64_t gemm1_tiles, Time tile_time,
                                         const gpu::GpuConfig& gc, Bandwidth link) {
  uint32_t best = 1;
  Time best_time = Time::max();
  for (uint32_t n = 1; n < gc.sm_count; ++n) {
    const uint64_t issue = gc.sm_store_bandwidth().bytes_per_second() * n;
    const Time send = Bandwidth::bytes_per_second(std::min(issue, link.bytes_per_second())).transfer_time(remote_bytes) +
                      Bandwidth::bytes_per_second(issue).transfer_time(local_bytes);
    const Time compute = tile_time * static_cast<int64_t>(ceil_div(gemm1_tiles, gc.sm_count - n));
    const Time t = max(send, compute);
    if (t < best_time) {
      best_time = t;
      best = n;
    }
  }
  return best;
}

void CometPlan::sender_jobs(Cluster& cluster, const CometParams& params, int s) {
  const int n = cluster.gpus();
  CometGpuPlan& p = gpus_[s];
  uint64_t remote = 0, local = 0;
  // Distance i: the destination for which this sender is the i-th source in its layout, so
  // that at every step each GPU sends to one peer and receives from one (no incast).
  for (int i = 0; i < n; ++i) {
    const int d = ((s - i) % n + n) % n;
    for (uint64_t pos : gpus_[d].rows_from_source[s]) {
      p.jobs.push_back({d, pos});
      (d == s ? local : remote) += 1;
    }
  }
  const uint64_t rb = cluster.model().row_bytes();
  uint64_t tiles = 0;
  Time tile_time;
  if (p.gemm1) {
    tiles = p.gemm1->tiles();
    if (tiles > 0) tile_time = p.gemm1->tile(0).compute;
  }
  if (params.dispatch == CometParams::Dispatch::CommBlocks && !p.jobs.empty()) {
    p.comm_blocks = params.comm_blocks > 0
                        ? static_cast<uint32_t>(params.comm_blocks)
                        : adaptive_comm_blocks(remote * rb, local * rb * 2, tiles, tile_time, cluster.gpu_config(),
                                               cluster.network().config().gpu_bandwidth);
    p.comm_blocks = std::min<uint32_t>(p.comm_blocks, static_cast<uint32_t>(p.jobs.size()));
  }
  p.plan_bytes = p.jobs.size() * kAddressBytes + p.tile_first_row.size() * kScheduleEntryBytes;
}

void CometPlan::combine_work(Cluster& cluster, int g) {
  const Workload& w = cluster.workload();
  const int n = cluster.gpus();
  CometGpuPlan& p = gpus_[g];
  std::map<int64_t, std::vector<std::pair<uint64_t, float>>> by_token;
  for (uint64_t pos = 0; pos < p.rows.size(); ++pos) {
    const CometRow& r = p.rows[pos];
    by_token[r.token].emplace_back(pos, w.routing().weight(r.token, r.slot));
  }
  // Owners in ring order after this GPU (its own tokens last), tokens ascending.
  for (int i = 1; i <= n; ++i) {
    const int owner = (g + i) % n;
    for (auto it = by_token.lower_bound(w.tokens().begin(owner)); it != by_token.end() && it->first < w.tokens().end(owner); ++it) {
      p.combine_tokens.push_back({owner, it->first, it->second});
    }
  }
  for (int64_t t = w.tokens().begin(g); t < w.tokens().end(g); ++t) p.partials_expected += sources_of_token(t).size();
}

}  // namespace moehub
