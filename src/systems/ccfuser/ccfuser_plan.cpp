#include "systems/ccfuser/ccfuser_plan.h"

#include <algorithm>

#include "config/param_table.h"
#include "sim/error.h"

namespace moehub {

namespace {

ParamTable<CcfuserParams> ccfuser_table() {
  using P = CcfuserParams;
  ParamTable<P> t;
  t.choice("systems.ccfuser.schedule", &P::schedule,
           std::vector<std::pair<std::string, P::Schedule>>{{"work_queue", P::Schedule::WorkQueue},
                                                            {"static_pairs", P::Schedule::StaticPairs}},
           "How fused-kernel thread blocks get work: a queue consumed by persistent blocks (dynamic reassignment across SMs) "
           "or the code's one CTA per (local, remote) block pair");
  t.integer("systems.ccfuser.block_rows", &P::block_rows, "Rows per block of the host plan (and the CTA tile's BM)")
      .at_least(1)
      .at_most(65536)
      .in_unit("rows");
  t.integer("systems.ccfuser.tile_n", &P::tile_n, "CTA tile width BN of the fused GEMMs").at_least(1).at_most(65536).in_unit("columns");
  t.integer("systems.ccfuser.tile_k", &P::tile_k, "CTA tile depth BK (K is padded to it)").at_least(1).at_most(65536).in_unit("elements");
  t.integer("systems.ccfuser.block_threads", &P::block_threads, "Threads per fused-kernel thread block").at_least(32).at_most(1024);
  t.time("systems.ccfuser.host_plan_base", &P::host_plan_base,
         "Host planning per layer: expert placement and block division (fixed part)");
  t.time("systems.ccfuser.host_plan_per_block", &P::host_plan_per_block, "Host planning per layer: Python work per 64-row block");
  t.integer("systems.ccfuser.plan_tensors", &P::plan_tensors, "Plan tensors copied host to device per layer")
      .at_least(0)
      .at_most(1024)
      .in_unit("copies");
  return t;
}

}  // namespace

void CcfuserParams::declare(ParamRegistry& r) { ccfuser_table().declare(r); }

CcfuserParams CcfuserParams::from(const Config& c) {
  CcfuserParams p;
  ccfuser_table().read(c, p);
  return p;
}

CcfuserPlan::CcfuserPlan(Cluster& cluster, const CcfuserParams& params) : tile_n_(static_cast<uint64_t>(params.tile_n)) {
  const Workload& w = cluster.workload();
  const ModelShape& m = cluster.model();
  const int n = cluster.gpus();
  const uint64_t br = static_cast<uint64_t>(params.block_rows);
  gpus_.resize(n);
  uint64_t code = 0;
  for (int g = 0; g < n; ++g) {
    CcfuserGpuPlan& p = gpus_[g];
    p.code_base = code;
    const auto& experts = w.placement().local_experts(g);
    p.blocks_of_expert.assign(experts.size(), 0);
    std::vector<CcfuserBlock> local, remote;
    for (size_t li = 0; li < experts.size(); ++li) {
      PerGpu<std::vector<RowRef>> by_source(n);
      for (const RowRef& r : w.plan().expert_rows(experts[li])) by_source[static_cast<int>(w.tokens().gpu_of_token(r.token))].push_back(r);
      for (int j = 0; j < n; ++j) {
        const int s = (g + j) % n;
        const auto& rows = by_source[s];
        for (size_t b = 0; b < rows.size(); b += br) {
          CcfuserBlock blk;
          blk.expert = experts[li];
          blk.local_expert = static_cast<int32_t>(li);
          blk.source = s;
          blk.remote = s != g;
          blk.rows.assign(rows.begin() + static_cast<std::ptrdiff_t>(b),
                          rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), b + br)));
          (blk.remote ? remote : local).push_back(std::move(blk));
          ++p.blocks_of_expert[li];
        }
      }
    }
    // Interleave (local, remote) while both lists last, then the rest one per pair.
    const size_t pairs = std::max(local.size(), remote.size());
    for (size_t i = 0; i < pairs; ++i) {
      std::vector<uint32_t> pair;
      for (auto* list : {&local, &remote}) {
        if (i >= list->size()) continue;
        CcfuserBlock b = std::move((*list)[i]);
        b.slot = static_cast<uint32_t>(p.blocks.size());
        pair.push_back(b.slot);
        p.blocks.push_back(std::move(b));
      }
      p.pairs.push_back(std::move(pair));
    }
    code += p.blocks.size();
    // Work items: per pair, the remote block's fetch first, then every column tile of its
    // blocks (local first). GEMM2 has no fetch: its results go back from the epilogue.
    const uint32_t n1 = tiles_n(static_cast<uint64_t>(m.gemm1_cols()));
    const uint32_t n2 = tiles_n(static_cast<uint64_t>(m.hidden));
    p.gemm1_by_pair.resize(p.pairs.size());
    p.gemm2_by_pair.resize(p.pairs.size());
    for (size_t i = 0; i < p.pairs.size(); ++i) {
      for (uint32_t b : p.pairs[i]) {
        if (!p.blocks[b].remote) continue;
        p.gemm1_by_pair[i].push_back(static_cast<uint32_t>(p.gemm1_items.size()));
        p.gemm1_items.push_back({CcfuserItem::Kind::Fetch, b, 0});
        ++p.fetch_blocks;
      }
      for (uint32_t b : p.pairs[i]) {
        for (uint32_t c = 0; c < n1; ++c) {
          p.gemm1_by_pair[i].push_back(static_cast<uint32_t>(p.gemm1_items.size()));
          p.gemm1_items.push_back({CcfuserItem::Kind::Compute, b, c});
        }
        for (uint32_t c = 0; c < n2; ++c) {
          p.gemm2_by_pair[i].push_back(static_cast<uint32_t>(p.gemm2_items.size()));
          p.gemm2_items.push_back({CcfuserItem::Kind::Compute, b, c});
        }
      }
    }
  }
  for (int g = 0; g < n; ++g) gpus_[g].combine_bytes = static_cast<uint64_t>(w.plan().rows_from(g)) * m.row_bytes();
}

std::pair<int, uint32_t> CcfuserPlan::block_of_code(uint64_t code) const {
  for (int g = gpus_.size(); g-- > 0;) {
    if (code >= gpus_[g].code_base && code < gpus_[g].code_base + gpus_[g].blocks.size()) return {g, static_cast<uint32_t>(code - gpus_[g].code_base)};
  }
  throw std::logic_error("CcfuserPlan: bad block code");
}

}  // namespace moehub
