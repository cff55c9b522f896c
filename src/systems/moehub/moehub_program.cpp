// The MoE-Hub program each GPU runs for one layer (paper IV-A4, Fig. 9), written against
// rowspMalloc and st.rowsp only:
//   1. rowspMalloc one region per local expert (static, conservative capacity).
//   2. Gate GEMM, then the top-k kernel whose thread blocks, as each token's experts are known,
//      issue st.rowsp for its k rows (RowID = token x k + slot: token-major, the order the RPM
//      favours) and st.rowsp.nop for the source-metadata column; local experts take the same path.
//   3. GEMM1 over the conservative grid: tile m covers LocalRowIDs [m BM, (m+1) BM) of a region.
//   4. Activation; GEMM2 (device-side problem sizes) whose epilogue reads the metadata column and
//      stores each result row into its source token's slot with ordinary remote stores.
//   5. Scaling at the source once a token's k rows are back.
// No count exchange, no host synchronisation, no permute or sort.
//
// Waiting: with the DAM (mh-dep, moehub) GEMM1 tiles and scaling blocks are gated and released by
// write acknowledgements; without it (mh-base, mh-pkt) they are resident and poll flags. The
// polling GEMM1 cannot know its grid either: it launches the same conservative grid and each
// block, once its flags show every row in, reads the row count from device memory and exits if
// its tile holds no rows (the device-side count read; its cost is that block's dispatch and
// polls). Row counts: the last routing block stores this GPU's per-expert row counts to every
// consumer (one small ordinary store each): the DAM's expected total; without the DAM it first
// waits until every row it stored has landed (a release fence), and the counts are the signal
// each polling GEMM1 block waits for, from every source (systems.moehub.software_signal).
//
// Lines between the "table-I" markers are the system's scheduling/communication code
// (scripts/count-moehub-lines.sh counts them for the paper's Table I).

#include <fmt/format.h>
#include <stdexcept>

#include "gpu/memory_kernel.h"
#include "systems/moehub/moehub_state.h"

namespace moehub {
namespace {
constexpr uint32_t kWeightBytes = 4;  // fp32 routing probabilities, as SharedKernels
constexpr uint32_t kExpertIndexBytes = 4;   // int32 expert indices, as SharedKernels
}  // namespace

gpu::Step st_rowsp(const RowspRegistry& registry, const RowspStore& s) {
  return gpu::Step::store(registry.resolve(s), s.bytes, HubTag::st_rowsp(s.malloc_id, s.row_id, s.row_offset, s.nop));
}

void MoeHubSystemImpl::start(Cluster& cluster) {
  build(cluster);
  for (int g = 0; g < cluster.gpus(); ++g) allocate_regions(g);
  for (int g = 0; g < cluster.gpus(); ++g) prepare_gpu(g);
  for (int g = 0; g < cluster.gpus(); ++g) launch_layer(g);
}

// table-I begin
void MoeHubSystemImpl::allocate_regions(int g) {
  const Workload& w = cluster_->workload();
  const uint64_t stride = (capacity_ * row_size_ + 4095) / 4096 * 4096;
  for (const int32_t e : w.placement().local_experts(g)) {
    HubRegion r;
    r.expert = e;
    r.base = HubAddressMap::kRegionBase + gpus_[g].regions.size() * stride;
    r.id = fabric_->registry().rowsp_malloc(static_cast<uint32_t>(g), r.base, row_size_, capacity_);
    region_of_expert_[static_cast<size_t>(e)] = r.id;
    gpus_[g].regions.push_back(std::move(r));
  }
}

void MoeHubSystemImpl::launch_layer(int g) {
  Cluster& c = *cluster_;
  HubGpu& h = gpus_[g];
  gpu::Stream& s = c.stream(g);
  const ModelShape& m = c.model();
  const auto tokens = static_cast<uint64_t>(c.workload().tokens().count(g));
  c.phases(g).routing_start = c.sim().now();
  const gpu::GemmModel gate(c.gpu_config(), gpu::GemmProblem{{tokens}, static_cast<uint64_t>(c.workload().logical_experts()),
                                                               static_cast<uint64_t>(m.hidden),
                                                               static_cast<uint32_t>(m.dtype_bytes)});
  c.launch(g, s, Activity::Routing, gate.kernel("router_gate"));
  // The expert kernels run on their own stream: they depend on data, not on the top-k kernel
  // ending (their tiles wait for their rows), so they may start while it still stores rows.
  gpu::Stream& experts = c.gpu(g).create_stream("experts");
  const gpu::EventId gated = c.gpu(g).create_event("router_gate done");
  c.host(g).record(s, gated);

  gpu::KernelSpec topk;
  topk.name = "router_topk_rowsp";
  topk.shape = kernels_->memory_shape();
  const uint32_t fit = c.gpu(g).blocks_per_sm(topk.shape);
  topk.blocks = c.gpu_config().sm_count * (p_.routing_blocks_per_sm ? std::min(fit, p_.routing_blocks_per_sm) : fit);
  topk.program = routing_program(g, topk.blocks);
  topk.on_done = [this, g] { fabric_->flush(g); };  // kernel end: partly merged RPM entries may leave
  c.launch(g, s, Activity::Routing, std::move(topk));

  c.host(g).wait(experts, gated);
  const Activity waiting = v_.dam ? Activity::Communication : Activity::Polling;
  if (!h.regions.empty()) {
    const gpu::GemmModel g1 =
        kernels_->gemm1_model(std::vector<uint64_t>(h.regions.size(), capacity_), kernels_->local_expert_rows(g));
    gpu::KernelSpec gemm1;
    gemm1.name = "gemm1";
    gemm1.blocks = static_cast<uint32_t>(g1.tiles());
    gemm1.shape = g1.block_shape();
    gemm1.program = gemm1_program(g);
    gemm1.on_done = [&c, g] { c.phases(g).gemm1_end = c.sim().now(); };
    h.gemm1 = c.launch(g, experts, waiting, std::move(gemm1));
    // Device-side problem sizes: the row counts are in device memory once GEMM1 has run.
    const std::vector<uint64_t> rows = kernels_->local_expert_rows(g);
    uint64_t total = 0;
    for (const uint64_t r : rows) total += r;
    c.launch(g, experts, Activity::ExpertCompute, kernels_->activation(g, total));
    gpu::KernelSpec gemm2 = kernels_->gemm2_model(rows).kernel("gemm2", gemm2_hooks(g));
    gemm2.on_done = [this, g] { fabric_->flush(g); };
    c.launch(g, experts, Activity::ExpertCompute, std::move(gemm2));
    if (software_counts()) c.launch(g, experts, Activity::Polling, combine_signal_kernel(g));
  }
  gpu::KernelSpec scaling;
  scaling.name = "scaling";
  scaling.shape = kernels_->memory_shape();
  scaling.blocks = static_cast<uint32_t>((tokens + h.tokens_per_group - 1) / h.tokens_per_group);
  scaling.program = scaling_program(g, scaling.blocks);
  scaling.on_done = [&c, g] { c.layer_done(g); };
  h.scaling = c.launch(g, experts, waiting, std::move(scaling));
}

// Top-k, then per token: read the row, st.rowsp it to each of its k experts with its metadata
// (.nop). The last block to finish stores the per-expert row counts to every consumer GPU.
std::shared_ptr<gpu::BlockProgram> MoeHubSystemImpl::routing_program(int g, uint32_t grid) {
  Cluster& c = *cluster_;
  const ModelShape& m = c.model();
  const int64_t k = m.top_k(), first = c.workload().tokens().begin(g), tokens = c.workload().tokens().count(g);
  const uint64_t topk_bytes = gpu::memory_bytes::routing(static_cast<uint64_t>(tokens), static_cast<uint64_t>(c.workload().logical_experts()),
                                                         static_cast<uint64_t>(c.workload().logical_model().top_k()),
                                                         static_cast<uint32_t>(m.dtype_bytes), kWeightBytes, kExpertIndexBytes);
  const int64_t per_token = 1 + 2 * k;
  const int64_t tp = c.workload().tp().tp(), rank = c.workload().tp().tp_rank(g);
  std::vector<int> consumers;  // GPUs with experts: they receive a row-count store
  for (int dst = 0; dst < c.gpus(); ++dst) {
    if (!c.workload().placement().local_experts(dst).empty()) consumers.push_back(dst);
  }
  if (source_chunks()) prepare_chunks(g, grid);
  return std::make_shared<gpu::FunctionProgram>([this, g, grid, k, first, tokens, topk_bytes, per_token, tp, rank,
                                                 consumers](gpu::BlockState& b) {
    Cluster& c = *cluster_;
    if (b.step == 0) {
      if (!c.phases(g).dispatch_start) c.phases(g).dispatch_start = c.sim().now();
      return gpu::Step::memory(topk_bytes / grid + (b.block < topk_bytes % grid ? 1 : 0));
    }
    if (source_chunks()) {  // a release due (source chunks) comes before the next store
      if (auto release = chunk_step(g, b.block)) return *release;
    }
    const int64_t lo = tokens * b.block / grid, hi = tokens * (b.block + 1) / grid;
    const int64_t s = static_cast<int64_t>(b.step) - 1 - (source_chunks() ? gpus_[g].chunks[b.block].extra : 0);
    if (s < (hi - lo) * per_token) {
      const int64_t t = first + lo + s / per_token, sub = s % per_token;
      if (sub == 0) return gpu::Step::memory(row_bytes_);  // read the token's row once
      // Under EP+TP a (token, expert) pair is T shard rows (slots e T .. e T + T - 1): each
      // producer issues its own TP rank's first, so that no rank's local rows wait behind a remote store.
      const int64_t j = (sub - 1) / 2 / tp * tp + ((sub - 1) / 2 % tp + rank) % tp;
      const MallocId id = region_of_expert_[static_cast<size_t>(c.workload().routing().expert(t, j))];
      const auto row = static_cast<uint64_t>(t * k + j);
      const bool meta = (sub - 1) % 2 == 1;
      if (source_chunks()) note_chunk_row(g, b.block, id, row, meta);
      if (!meta) return issue_row(RowspStore{id, row, 0, static_cast<uint32_t>(row_bytes_), false});
      return st_rowsp(fabric_->registry(), RowspStore{id, row, row_bytes_, p_.metadata_bytes, true});
    }
    if (source_chunks() && drain_chunks(g, b.block)) return *chunk_step(g, b.block);
    // The row-count stores, by the last block only (without the DAM behind a release fence).
    const int64_t fence = software_counts() ? 1 : 0, r = s - (hi - lo) * per_token - fence;
    if (r == -fence && ++gpus_[g].routing_finished < grid) return gpu::Step::done();
    if (r < 0) return count_fence(g);
    if (r >= static_cast<int64_t>(consumers.size())) return gpu::Step::done();
    const int dst = consumers[static_cast<size_t>(r)];
    const uint64_t bytes = kRowCountBytes * c.workload().placement().local_experts(dst).size();
    return gpu::Step::store(static_cast<uint32_t>(dst), bytes, HubTag::st(HubAddressMap::kCountAddress));
  });
}

// GEMM1 over the region capacity, M-tile-major across local experts (block -> m, expert, n).
std::shared_ptr<gpu::BlockProgram> MoeHubSystemImpl::gemm1_program(int g) {
  const size_t experts = gpus_[g].regions.size();
  // Capacity-sized grid; the M-tiles beyond each expert's rows are retired unrun (DAM) or find
  // nothing to do, so the weights are shared among the tiles that run.
  const gpu::GemmModel model =
      kernels_->gemm1_model(std::vector<uint64_t>(experts, capacity_), kernels_->local_expert_rows(g));
  // Without the DAM a block polls its tile's flag, or (source counts) every source's count.
  return std::make_shared<gpu::FunctionProgram>([this, g, experts, model](gpu::BlockState& b) {
    const uint64_t m = b.block / (experts * tiles_n1_), li = b.block / tiles_n1_ % experts, n = b.block % tiles_n1_;
    HubRegion& r = gpus_[g].regions[li];
    if (b.step == 0) {
      if (v_.dam) return gpu::Step::gate();
      if (source_counts()) return on_sm(b, wait_source_counts(g));
      return on_sm(b, gpu::Step::wait(r.data_flag[m], static_cast<int64_t>(bm_ * row_bytes_), gpu::WaitMode::Poll));
    }
    if (b.step == 1) {
      const uint64_t rows = tile_rows(g, li, m);
      if (rows == 0) return tile_exit(b);  // beyond the count: exit
      fn_->gemm1(g, li, m, rows);
      begin_tile(g, b, li, m);
      const gpu::GemmTile t = model.tile((li * tiles_m_ + m) * tiles_n1_ + n);
      return gpu::Step::compute_memory(t.compute, t.hbm_bytes);
    }
    end_tile(g, b);
    return gpu::Step::done();
  });
}

// GEMM2: wait for the tile's metadata column, then the epilogue stores each output row slice to
// the source token's combine slot named by that column.
gpu::GemmHooks MoeHubSystemImpl::gemm2_hooks(int g) {
  gpu::GemmHooks hooks;
  hooks.before = [this, g](const gpu::GemmTile& t) -> std::optional<gpu::Step> {
    const HubRegion& r = gpus_[g].regions[t.group];
    return gpu::Step::wait(r.meta_flag[t.tile_row], static_cast<int64_t>(t.rows * p_.metadata_bytes),
                           v_.dam ? gpu::WaitMode::Hardware : gpu::WaitMode::Poll);
  };
  hooks.after = [this, g](const gpu::GemmTile& t, uint32_t i) {
    Cluster& c = *cluster_;
    if (i == 0) {
      fn_->gemm2(g, t.group, t.tile_row, t.rows, gpus_[g].regions[t.group].source);
      if (!c.phases(g).combine_start) c.phases(g).combine_start = c.sim().now();
    }
    if (i >= t.rows) return gpu::Step::done();
    const int64_t source = gpus_[g].regions[t.group].source[t.tile_row * bm_ + i];
    if (source < 0) throw std::logic_error(fmt::format("GPU {}: GEMM2 read a metadata column that has not landed", g));
    const int64_t k = c.model().top_k(), token = source / k;
    const auto src = static_cast<int>(c.workload().tokens().gpu_of_token(token));
    const auto slot = static_cast<uint64_t>((token - c.workload().tokens().begin(src)) * k + source % k);
    const uint64_t eb = static_cast<uint64_t>(c.model().dtype_bytes);
    gpus_[g].combine_issued += t.cols * eb;
    return gpu::Step::store(static_cast<uint32_t>(src), t.cols * eb,
                            HubTag::st(HubAddressMap::kCombineBase + slot * row_bytes_ + t.tile_col * bn_ * eb));
  };
  return hooks;
}

// Scaling block b sums the k returned rows of its tokens once they are all in memory. With
// source counts it first polls until every expert GPU's combine-done flag is in (internode_ll.cu:
// 955, then the grid sync at 976: no token is reduced before every flag is in).
std::shared_ptr<gpu::BlockProgram> MoeHubSystemImpl::scaling_program(int g, uint32_t groups) {
  (void)groups;
  return std::make_shared<gpu::FunctionProgram>([this, g](gpu::BlockState& b) {
    Cluster& c = *cluster_;
    const HubGpu& h = gpus_[g];
    const int64_t k = c.model().top_k(), tokens = c.workload().tokens().count(g);
    const int64_t lo = static_cast<int64_t>(b.block) * h.tokens_per_group;
    const int64_t hi = std::min<int64_t>(tokens, lo + h.tokens_per_group);
    if (b.step == 0) {
      if (v_.dam) return gpu::Step::gate();
      if (software_counts()) return wait_combine_flags(g);
      return gpu::Step::wait(h.combine_flag[b.block], (hi - lo) * k * static_cast<int64_t>(row_bytes_), gpu::WaitMode::Poll);
    }
    if (b.step == 1) {
      fn_->scaling(g, lo, hi);
      begin_work(g, true);
      return gpu::Step::memory(gpu::memory_bytes::scaling(static_cast<uint64_t>(hi - lo), static_cast<uint64_t>(k),
                                                          static_cast<uint64_t>(c.model().hidden),
                                                          static_cast<uint32_t>(c.model().dtype_bytes), kWeightBytes));
    }
    end_work(g, true);
    return gpu::Step::done();
  });
}
// table-I end

}  // namespace moehub
