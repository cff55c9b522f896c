#pragma once
// Internal to the moehub systems: the per-GPU state the hub reports land in (regions, flags,
// DAM contexts) and the system class whose program is in
// moehub_program.cpp and whose hardware-facing side is in moehub_system.cpp.

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gpu/block_program.h"
#include "hub/data_availability_manager.h"
#include "hub/hub_config.h"
#include "hub/replica_selector.h"
#include "hub/rowsp.h"
#include "hub/rowsp_registry.h"
#include "platform/functional_data.h"
#include "systems/moehub/dispatch_trace.h"
#include "systems/moehub/hub_fabric.h"
#include "systems/moehub/moehub_functional.h"
#include "systems/moehub/moehub_system.h"
#include "platform/shared_kernels.h"

namespace moehub {

// st.rowsp as a store step: the producer resolves the MallocID to its GPU (L1 TLB, paper IV-A2).
gpu::Step st_rowsp(const RowspRegistry& registry, const RowspStore& s);

// How a consumer without the DAM (mh-base, mh-pkt) learns that its rows have landed.
enum class SoftwareSignal : uint8_t {
  // The producer's last routing block waits until every row it stored has landed (a release
  // fence), then stores its per-expert row counts to each consumer; a GEMM1 block polls until
  // every source's count is in, then sums them (DeepEP's low-latency dispatch, docs/hub/ablation.md
  // 12). Combine: after GEMM2 one block waits until every result row it stored has landed, then
  // stores a flag to every GPU; a scaling block polls until every expert GPU's flag is in
  // (DeepEP's low-latency combine).
  SourceCounts,
  // The hub bumps a per-M-tile flag as each row lands: the DAM's counting, not a software protocol.
  HubTileFlags,
  // As SourceCounts, and besides a routing block (a channel) releases its rows to a GPU every
  // `signal_chunk_rows` rows with a tail store after a fence; a GEMM1 block polls its tile until
  // every row in it is behind a landed tail, or until every source's count is in, whichever is
  // first (DeepEP's intranode dispatch, docs/hub/ablation.md 13).
  SourceChunks,
};

// Values come only from configs/defaults.toml (systems.moehub.*), through from().
struct MoeHubParams {
  double capacity_factor = 0;         // region capacity over the mean rows per expert (0: all tokens)
  uint32_t metadata_bytes = 0;        // source-metadata column
  uint32_t dispatch_transaction_bytes = 0;
  uint32_t epilogue_transaction_bytes = 0;
  uint32_t routing_blocks_per_sm = 0;  // routing (st.rowsp) kernel blocks per SM; 0: as many as fit
  SoftwareSignal software_signal = SoftwareSignal::SourceCounts;  // without the DAM
  uint32_t signal_chunk_rows = 0;  // SourceChunks: rows per (routing block, GPU) between releases
  static MoeHubParams from(const Config& c);
};

// What the compiler and the runtime derive from the workload (region capacity, GEMM1 M-tiles,
// DAM groups) and what that asks of the hub: computed before anything runs, so that a hub too
// small for the workload is refused up front (check) rather than when the layer reaches it.
struct HubSizing {
  uint64_t row_bytes = 0, row_size = 0;  // data row; data + metadata column
  uint64_t capacity = 0;                 // rows per rowspMalloc region
  uint64_t tiles_m = 0, tiles_per_group = 1, groups_per_region = 0;
  uint32_t bm = 0;
  static HubSizing of(const MoeHubParams& p, const HubConfig& hub, const gpu::GpuConfig& gpu, const Workload& w);
  // A scaling block's token range on a GPU with `tokens` tokens (at most one DAM table of
  // groups, at most one group per token).
  static uint32_t tokens_per_group(uint64_t tokens, const HubConfig& hub);
  // Throws UserError naming the hub parameter and the width or size the workload needs.
  void check(const MoeHubParams& p, const HubConfig& hub, const Workload& w, bool dam) const;
};

inline constexpr uint32_t kRowCountBytes = 4;  // one int32 row count per consumer expert

// Device addresses of one GPU's buffers (49-bit space; only the hub's arithmetic uses them).
// Local addresses stay below 2^40; the hub puts the GPU above them for peer stores.
struct HubAddressMap {
  static constexpr uint64_t kRegionBase = 1ULL << 32;   // expert-input regions (rowspMalloc)
  static constexpr uint64_t kCombineBase = 1ULL << 38;  // combine slots: (local token x k + slot) rows
  static constexpr uint64_t kCountAddress = 1ULL << 39; // where producers store their row counts
  // SoftwareSignal::SourceCounts: where an expert GPU stores its combine-done flag.
  static constexpr uint64_t kCombineFlagAddress = kCountAddress + (1ULL << 36);
  // SoftwareSignal::SourceChunks: tail stores at (routing block << 22) + 4 x rows released.
  static constexpr uint64_t kTailAddress = kCountAddress + (1ULL << 37);
};

// SoftwareSignal::SourceChunks at a producer: one routing block's releases.
struct ChunkCursor {
  uint32_t extra = 0;          // steps inserted into the block's program (fences, tail stores)
  uint64_t issued = 0;         // bytes of st.rowsp stores issued
  bool fenced = false, drained = false;
  std::vector<uint32_t> sent;  // per GPU: rows since its last release
  std::vector<uint32_t> rows;  // per GPU: rows issued so far (a tail's value)
  std::vector<int> due;        // GPUs whose release is due
  gpu::SignalId landed = 0;    // bytes of its stores landed anywhere
  uint64_t fences = 0, tails = 0;  // statistics
};

// At a consumer, per (source GPU, routing block): rows whose metadata landed, not yet released.
struct ChunkInbox {
  uint64_t released = 0;
  std::vector<std::pair<uint32_t, uint64_t>> pending;  // (row's place in the block's rows to this GPU, li x tiles + m)
};

// One local expert's rowspMalloc region at its GPU.
struct HubRegion {
  int64_t expert = 0;
  MallocId id;
  uint64_t base = 0;
  uint64_t expected_rows = 0;   // from the producers' count stores
  uint64_t data_landed = 0;     // data bytes (not metadata) in memory
  uint64_t rows_allocated = 0;  // highest LocalRowID + 1 seen
  std::vector<int64_t> source;  // per LocalRowID: the RowID read from the metadata column (-1: not landed)
  std::vector<gpu::SignalId> data_flag;  // per M-tile: data bytes landed (polling variants)
  std::vector<gpu::SignalId> meta_flag;  // per M-tile: metadata bytes landed
};

struct HubGpu {
  std::vector<HubRegion> regions;
  std::unique_ptr<DataAvailabilityManager> dam_gemm1, dam_scaling;
  gpu::KernelId gemm1 = 0, scaling = 0;
  uint64_t report_bytes = 0;    // count stores landed
  bool reports_in = false;
  bool all_arrived = false;     // every expected data byte landed
  // Combine at the source: k slots per local token.
  uint64_t combine_landed = 0;
  uint32_t tokens_per_group = 1;
  std::vector<gpu::SignalId> combine_flag;  // per scaling block (polling variants)
  // Activity: intervals where at least one GEMM1 tile / scaling block works.
  uint32_t computing = 0, scaling_blocks = 0;
  Time computing_since, scaling_since;
  std::optional<Time> first_tile;  // first GEMM1 tile began its math
  std::optional<Time> first_scaling;  // first scaling block began its reduction
  uint32_t routing_finished = 0;  // routing blocks done (the last one stores the row counts)
  // SoftwareSignal::SourceCounts: as producer, bytes of its st.rowsp stores landed anywhere
  // (its release fence); as consumer, the bytes of every source's count store (one 32 B sector
  // per expert holds all 8 sources' counts, so a poll reads them all).
  gpu::SignalId fence = 0;
  gpu::SignalId counts_in = 0;
  // The same for the combine: as expert GPU, bytes of its GEMM2 result stores issued and landed
  // anywhere; as source, the bytes of every expert GPU's combine-done flags.
  uint64_t combine_issued = 0;
  gpu::SignalId combine_fence = 0;
  gpu::SignalId combine_flags_in = 0;
  // SoftwareSignal::SourceChunks: as producer, per routing block its cursor and per row
  // ((token - first) x k + slot) its (block, place); as consumer, per (source, block) its inbox.
  std::vector<ChunkCursor> chunks;
  std::vector<std::pair<uint32_t, uint32_t>> row_chunk;
  std::vector<ChunkInbox> inbox;
};

class MoeHubSystemImpl final : public MoeSystem, public HubListener {
 public:
  MoeHubSystemImpl(const Config& config, MoeHubVariant variant);
  void start(Cluster& cluster) override;
  // Redundant experts: each producer hub's one-to-many table picks a replica per row
  // (hub_replicas.cpp).
  std::optional<Workload> own_workload(const Workload& workload) override;
  void check(const Config& config, const Workload& workload) const override;
  std::vector<std::string> conservation_violations(Cluster& cluster) const override;
  nlohmann::json stats(Cluster& cluster) override;
  void on_landed(int g, const LandedWrite& w) override;

 private:
  // Hardware-facing side (moehub_system.cpp).
  void build(Cluster& cluster);
  void prepare_gpu(int g);
  void on_gemm1_signal(int g, const DamSignal& s);
  // SoftwareSignal::SourceCounts (moehub_system.cpp): whether it applies, the producer's fence
  // before its count stores, and a GEMM1 block's wait for every source's count (one poll).
  bool source_counts() const { return !v_.dam && p_.software_signal == SoftwareSignal::SourceCounts; }
  // Counts and combine flags after fences (SourceCounts and SourceChunks); the chunks' tails.
  bool software_counts() const { return !v_.dam && p_.software_signal != SoftwareSignal::HubTileFlags; }
  bool source_chunks() const { return !v_.dam && p_.software_signal == SoftwareSignal::SourceChunks; }
  gpu::Step count_fence(int g);
  gpu::Step wait_source_counts(int g);
  // The combine's: the kernel after GEMM2 that fences its result stores and stores the
  // combine-done flags, and a scaling block's wait for every expert GPU's flags.
  gpu::KernelSpec combine_signal_kernel(int g);
  gpu::Step wait_combine_flags(int g);
  // SourceChunks (software_signal.cpp): a routing block's releases, and their arrival.
  void prepare_chunks(int g, uint32_t grid);
  void note_chunk_row(int g, uint32_t block, MallocId id, uint64_t row, bool meta);
  bool drain_chunks(int g, uint32_t block);
  std::optional<gpu::Step> chunk_step(int g, uint32_t block);
  void chunk_row_landed(int g, const LandedWrite& w, size_t li, uint64_t m);
  void chunk_tail_landed(int g, const LandedWrite& w);
  void release_chunk_rows(int g, ChunkInbox& in);
  void software_signal_stats(Cluster& cluster, nlohmann::json& hub) const;
  void check_all_arrived(int g);
  uint64_t tile_rows(int g, size_t li, uint64_t m) const;
  void begin_work(int g, bool scaling);
  void end_work(int g, bool scaling);
  // The same, for a GEMM1 block, with the dispatch trace's notes (Fig. 6; moehub_program.cpp).
  gpu::Step issue_row(const RowspStore& s);
  gpu::Step on_sm(gpu::BlockState& b, gpu::Step wait);
  Time since(const gpu::BlockState& b) const;
  gpu::Step tile_exit(gpu::BlockState& b);
  void begin_tile(int g, gpu::BlockState& b, size_t li, uint64_t m);
  void end_tile(int g, gpu::BlockState& b);

  nlohmann::json replica_stats(Cluster& cluster) const;  // hub_replicas.cpp

  // The program (moehub_program.cpp).
  void allocate_regions(int g);
  void launch_layer(int g);
  std::shared_ptr<gpu::BlockProgram> routing_program(int g, uint32_t grid);
  std::shared_ptr<gpu::BlockProgram> gemm1_program(int g);
  gpu::GemmHooks gemm2_hooks(int g);
  std::shared_ptr<gpu::BlockProgram> scaling_program(int g, uint32_t groups);

  MoeHubVariant v_;
  MoeHubParams p_;
  HubConfig hub_;
  Cluster* cluster_ = nullptr;
  std::unique_ptr<HubFabric> fabric_;
  std::unique_ptr<SharedKernels> kernels_;
  PerGpu<HubGpu> gpus_;
  std::vector<MallocId> region_of_expert_;
  uint64_t capacity_ = 0, tiles_m_ = 0, tiles_n1_ = 0, row_bytes_ = 0, row_size_ = 0;
  uint64_t tiles_per_group_ = 1, groups_per_region_ = 0;  // GEMM1 M-tiles per DAM group
  uint32_t bm_ = 0, bn_ = 0;
  uint64_t dam_blocks_ = 0;  // thread blocks the DAM released or retired
  std::unique_ptr<MoeHubFunctional> fn_;  // does nothing in timing-only runs
  std::vector<ReplicaSelector> selectors_;  // per producer GPU; empty without redundant experts
  DispatchTrace trace_;  // where each row's dispatch time goes (stats only)
};

}  // namespace moehub
