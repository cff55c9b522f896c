// How the moehub variants without the DAM (mh-base, mh-pkt) learn that data landed, in software
// (systems.moehub.software_signal; docs/hub/ablation.md 12-13): release fences, count and tail
// stores, and the polling waits that read them. The hub-bumped flags of "hub-tile-flags" are in
// moehub_system.cpp's on_landed.

#include <fmt/format.h>
#include <stdexcept>

#include "systems/moehub/moehub_state.h"

namespace moehub {

// The release fence before a producer's count stores (DeepEP dd758caf
// csrc/kernels/legacy/internode_ll.cu:330-338: wait until the sends are done, then
// st_release_sys_global of the count): the last routing block waits, resident, until every byte
// of every row this GPU stored (data and metadata, local rows too) has landed. Partly merged RPM
// entries may leave at once, as at any fence.
gpu::Step MoeHubSystemImpl::count_fence(int g) {
  const Cluster& c = *cluster_;
  fabric_->flush(g);
  const auto rows = static_cast<uint64_t>(c.workload().tokens().count(g) * c.model().top_k());
  return gpu::Step::wait(gpus_[g].fence, static_cast<int64_t>(rows * row_size_), gpu::WaitMode::Poll);
}

// A polling GEMM1 block's wait for every source's count (internode_ll.cu:387: one
// ld_acquire_sys_global loop per (local expert, source rank), each (expert, rank) by its own
// warp group, so the sources are polled at once; the counts of one expert are contiguous,
// rdma_recv_count + local_expert_idx x num_ranks + src_rank, 32 B at 8 ranks: one sector per
// poll, `gpu.poll_bytes`). The counts of all this GPU's experts ride in one store per source.
gpu::Step MoeHubSystemImpl::wait_source_counts(int g) {
  const HubGpu& h = gpus_[g];
  const auto bytes = static_cast<int64_t>(kRowCountBytes * h.regions.size()) * cluster_->gpus();
  return gpu::Step::wait(h.counts_in, bytes, gpu::WaitMode::Poll);
}

// The combine (DeepEP dd758caf csrc/kernels/legacy/internode_ll.cu:915-930): once GEMM2 has
// stored every result row, one block waits until they have all landed (the release of
// st_release_sys_global, as count_fence), then stores its combine-done flag, one 4 B word per
// local expert, to every GPU.
gpu::KernelSpec MoeHubSystemImpl::combine_signal_kernel(int g) {
  gpu::KernelSpec k;
  k.name = "combine_signal";
  k.shape = kernels_->memory_shape();
  k.blocks = 1;
  k.program = std::make_shared<gpu::FunctionProgram>([this, g](gpu::BlockState& b) {
    Cluster& c = *cluster_;
    HubGpu& h = gpus_[g];
    if (b.step == 0) {
      fabric_->flush(g);
      return gpu::Step::wait(h.combine_fence, static_cast<int64_t>(h.combine_issued), gpu::WaitMode::Poll);
    }
    const auto dst = static_cast<int>(b.step - 1);
    if (dst >= c.gpus()) return gpu::Step::done();
    return gpu::Step::store(static_cast<uint32_t>(dst), kRowCountBytes * h.regions.size(),
                            HubTag::st(HubAddressMap::kCombineFlagAddress));
  });
  return k;
}

// A scaling block's wait for every expert GPU's combine-done flags (internode_ll.cu:955: one
// ld_acquire_sys_global loop per expert, each by its own warp group, so all at once; here the
// flags of one GPU's experts share a store).
gpu::Step MoeHubSystemImpl::wait_combine_flags(int g) {
  int64_t experts = 0;
  for (int src = 0; src < cluster_->gpus(); ++src) {
    experts += static_cast<int64_t>(cluster_->workload().placement().local_experts(src).size());
  }
  return gpu::Step::wait(gpus_[g].combine_flags_in, kRowCountBytes * experts, gpu::WaitMode::Poll);
}

// SoftwareSignal::SourceChunks, as DeepEP's intranode dispatch (dd758caf
// csrc/kernels/legacy/intranode.cu:355-411): a routing block is a channel; after every
// `signal_chunk_rows` rows it sent to a GPU, and at the end of its tokens, it releases them with
// one tail store to that GPU (its value, in 4 B words, in the address). The release is a fence: the block waits, resident, until every
// byte it stored has landed (as count_fence, for this block only).
void MoeHubSystemImpl::prepare_chunks(int g, uint32_t grid) {
  Cluster& c = *cluster_;
  HubGpu& h = gpus_[g];
  if (grid >= (1u << 16)) throw std::logic_error(fmt::format("GPU {}: {} routing blocks do not fit a tail address", g, grid));
  h.chunks.assign(grid, ChunkCursor{});
  for (uint32_t b = 0; b < grid; ++b) {
    h.chunks[b].landed = c.gpu(g).create_signal(fmt::format("routing block {} stores landed", b));
    h.chunks[b].sent.assign(static_cast<size_t>(c.gpus()), 0);
    h.chunks[b].rows.assign(static_cast<size_t>(c.gpus()), 0);
  }
  h.row_chunk.assign(static_cast<size_t>(c.workload().tokens().count(g) * c.model().top_k()), {0, 0});
  for (int dst = 0; dst < c.gpus(); ++dst) gpus_[dst].inbox.resize(static_cast<size_t>(c.gpus()) * grid);
}

// The routing block issues a row's data (meta = false) or metadata store to region `id`.
void MoeHubSystemImpl::note_chunk_row(int g, uint32_t block, MallocId id, uint64_t row, bool meta) {
  HubGpu& h = gpus_[g];
  ChunkCursor& k = h.chunks[block];
  const uint32_t dst = fabric_->registry().resolve_gpu(id);
  const auto index = static_cast<size_t>(row - static_cast<uint64_t>(cluster_->workload().tokens().begin(g) * cluster_->model().top_k()));
  if (!meta) {
    k.issued += row_bytes_;
    if (k.rows[dst] >= (1u << 20)) throw std::logic_error(fmt::format("GPU {}: a tail of {} rows does not fit its address", g, k.rows[dst]));
    h.row_chunk[index] = {block, k.rows[dst]++};
    return;
  }
  k.issued += p_.metadata_bytes;
  if (++k.sent[dst] == p_.signal_chunk_rows) {
    k.sent[dst] = 0;
    k.due.push_back(static_cast<int>(dst));
  }
}

// End of the block's tokens: release the partial chunks. True when a release is due.
bool MoeHubSystemImpl::drain_chunks(int g, uint32_t block) {
  ChunkCursor& k = gpus_[g].chunks[block];
  if (!k.drained) {
    k.drained = true;
    for (size_t dst = 0; dst < k.sent.size(); ++dst) {
      if (k.sent[dst] > 0) k.due.push_back(static_cast<int>(dst));
      k.sent[dst] = 0;
    }
  }
  return !k.due.empty();
}

// The block's next release step, if one is due: the fence, then one tail store per GPU whose
// chunk is due (intranode.cu:411: st_release_sys_global of the tail), its value in the address.
std::optional<gpu::Step> MoeHubSystemImpl::chunk_step(int g, uint32_t block) {
  ChunkCursor& k = gpus_[g].chunks[block];
  if (k.due.empty()) return std::nullopt;
  ++k.extra;
  if (!k.fenced) {
    k.fenced = true;
    ++k.fences;
    fabric_->flush(g);
    return gpu::Step::wait(k.landed, static_cast<int64_t>(k.issued), gpu::WaitMode::Poll);
  }
  const int dst = k.due.back();
  k.due.pop_back();
  if (k.due.empty()) k.fenced = false;
  ++k.tails;
  const uint64_t tail = HubAddressMap::kTailAddress + (uint64_t{block} << 22) + (uint64_t{k.rows[static_cast<size_t>(dst)]} << 2);
  return gpu::Step::store(static_cast<uint32_t>(dst), kRowCountBytes, HubTag::st(tail));
}

// A write of one of source w.src's rows landed at GPU g: it counts toward its block's fence, and
// its metadata puts the row in the block's inbox until a tail releases it.
void MoeHubSystemImpl::chunk_row_landed(int g, const LandedWrite& w, size_t li, uint64_t m) {
  const Cluster& c = *cluster_;
  HubGpu& src = gpus_[w.src];
  const auto index = static_cast<size_t>(w.row_id - static_cast<uint64_t>(c.workload().tokens().begin(w.src) * c.model().top_k()));
  const auto [block, seq] = src.row_chunk[index];
  cluster_->gpu(w.src).signal_add(src.chunks[block].landed, w.bytes);
  if (!w.nop) return;
  ChunkInbox& in = gpus_[g].inbox[static_cast<size_t>(w.src) * src.chunks.size() + block];
  in.pending.push_back({seq, li * tiles_m_ + m});
  release_chunk_rows(g, in);
}

// A tail store from (w.src, block) landed at GPU g: the rows it covers become visible.
void MoeHubSystemImpl::chunk_tail_landed(int g, const LandedWrite& w) {
  const uint64_t offset = w.address - HubAddressMap::kTailAddress;
  const auto block = static_cast<size_t>(offset >> 22);
  ChunkInbox& in = gpus_[g].inbox[static_cast<size_t>(w.src) * gpus_[w.src].chunks.size() + block];
  in.released = std::max<uint64_t>(in.released, (offset >> 2) & ((1u << 20) - 1));
  release_chunk_rows(g, in);
}

// Rows of the inbox behind its tail: one row's bytes on its M-tile's flag each.
void MoeHubSystemImpl::release_chunk_rows(int g, ChunkInbox& in) {
  HubGpu& h = gpus_[g];
  size_t kept = 0;
  for (const auto& [seq, tile] : in.pending) {
    if (seq < in.released) {
      cluster_->gpu(g).signal_add(h.regions[tile / tiles_m_].data_flag[tile % tiles_m_], static_cast<int64_t>(row_bytes_));
    } else {
      in.pending[kept++] = {seq, tile};
    }
  }
  in.pending.resize(kept);
}

// Without the DAM: when each GPU's results landed and its first reduction began (the combine's
// flags), and the routing blocks' releases (source chunks).
void MoeHubSystemImpl::software_signal_stats(Cluster& cluster, nlohmann::json& hub) const {
  if (software_counts()) {
    nlohmann::json landed = nlohmann::json::array(), reduced = nlohmann::json::array();
    for (int g = 0; g < cluster.gpus(); ++g) {
      const auto& e = cluster.phases(g).combine_end;
      const auto& s = gpus_[static_cast<size_t>(g)].first_scaling;
      landed.push_back(e ? nlohmann::json(e->us()) : nlohmann::json(nullptr));
      reduced.push_back(s ? nlohmann::json(s->us()) : nlohmann::json(nullptr));
    }
    hub["combine_end_us"] = landed;
    hub["scaling_first_block_us"] = reduced;
  }
  if (source_chunks()) {
    uint64_t fences = 0, tails = 0;
    for (int g = 0; g < cluster.gpus(); ++g) {
      for (const ChunkCursor& k : gpus_[static_cast<size_t>(g)].chunks) fences += k.fences, tails += k.tails;
    }
    hub["chunk_fences"] = fences;
    hub["chunk_tail_stores"] = tails;
  }
}

}  // namespace moehub
