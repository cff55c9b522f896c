// The hardware-facing side of the moehub systems: building the hubs, what happens when a
// write lands (DAM acknowledgement or polling flag, metadata column, and the functional
// companion's row assembly), DAM signals to the thread-block dispatcher, and the statistics. The program the
// GPUs run is in moehub_program.cpp.

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "config/param_table.h"
#include "sim/error.h"
#include "systems/moehub/moehub_state.h"

namespace moehub {

namespace {

ParamTable<MoeHubParams> moehub_table() {
  using P = MoeHubParams;
  ParamTable<P> t;
  t.real("systems.moehub.capacity_factor", &P::capacity_factor,
         "rowspMalloc region capacity per expert, as a multiple of the mean rows per expert (capped at all tokens); "
         "0: every token, the worst case")
      .at_least(0);
  t.bytes("systems.moehub.metadata_bytes", &P::metadata_bytes, "Source-metadata column per row, sent with st.rowsp.nop")
      .positive()
      .at_most(1 << 24);
  t.bytes("systems.moehub.dispatch_transaction_bytes", &P::dispatch_transaction_bytes,
          "Bytes of a row one warp store instruction of the routing kernel hands the hub (within one line)")
      .positive()
      .at_most(1 << 24);
  t.bytes("systems.moehub.epilogue_transaction_bytes", &P::epilogue_transaction_bytes,
          "Bytes of an output row one warp store instruction of the GEMM2 epilogue hands the hub")
      .positive()
      .at_most(1 << 24);
  t.integer("systems.moehub.routing_blocks_per_sm", &P::routing_blocks_per_sm,
            "Thread blocks per SM of the routing kernel that issues st.rowsp (blocks stalled on stores hold their SM's "
            "threads from GEMM1); 0: as many as fit")
      .at_most(1024)
      .in_unit("blocks");
  t.choice("systems.moehub.software_signal", &P::software_signal,
           std::vector<std::pair<std::string, SoftwareSignal>>{{"source-counts", SoftwareSignal::SourceCounts},
                                                               {"hub-tile-flags", SoftwareSignal::HubTileFlags},
                                                               {"source-chunks", SoftwareSignal::SourceChunks}},
           "How mh-base and mh-pkt learn that rows landed: per-source row counts (and combine-done flags) stored after a release fence, "
           "polled by GEMM1 (software), or per-M-tile flags the hub bumps as rows land");
  t.integer("systems.moehub.signal_chunk_rows", &P::signal_chunk_rows,
            "software_signal = source-chunks: rows a routing block sends to one GPU between two releases (tail stores)")
      .positive()
      .at_most(1 << 20)
      .in_unit("rows");
  return t;
}

}  // namespace

MoeHubParams MoeHubParams::from(const Config& c) {
  MoeHubParams p;
  moehub_table().read(c, p);
  return p;
}

void declare_moehub_params(ParamRegistry& r) { moehub_table().declare(r); }

MoeHubSystemImpl::MoeHubSystemImpl(const Config& config, MoeHubVariant variant)
    : v_(variant), p_(MoeHubParams::from(config)), hub_(HubConfig::from(config)) {}

HubSizing HubSizing::of(const MoeHubParams& p, const HubConfig& hub, const gpu::GpuConfig& gpu, const Workload& w) {
  const ModelShape& m = w.model();
  HubSizing z;
  z.row_bytes = m.row_bytes();
  z.row_size = z.row_bytes + p.metadata_bytes;
  z.bm = gpu.gemm_tile.m;
  // The compiler's conservative region (paper IV-A2): capacity_factor x the mean rows of an
  // expert, never more than every token.
  // 0: the worst case, every token (an expert receives a token at most once).
  const double mean = static_cast<double>(w.routing().rows()) / static_cast<double>(m.experts());
  const auto tokens = static_cast<uint64_t>(w.routing().tokens());
  z.capacity = p.capacity_factor == 0.0
                   ? tokens
                   // The cap applies before the conversion: a large factor's product may not fit an integer.
                   : std::max<uint64_t>(1, static_cast<uint64_t>(std::min(static_cast<double>(tokens), std::ceil(p.capacity_factor * mean))));
  z.tiles_m = (z.capacity + z.bm - 1) / z.bm;
  // The compiler groups M-tiles so that every local expert's tiling fits the dependency table.
  size_t most_local = 1;
  for (int64_t g = 0; g < w.tokens().gpus(); ++g) most_local = std::max(most_local, w.placement().local_experts(static_cast<int>(g)).size());
  const uint64_t entries_per_region = std::max<uint64_t>(1, hub.dam.table_entries / most_local);
  z.tiles_per_group = (z.tiles_m + entries_per_region - 1) / entries_per_region;
  z.groups_per_region = (z.tiles_m + z.tiles_per_group - 1) / z.tiles_per_group;
  return z;
}

uint32_t HubSizing::tokens_per_group(uint64_t tokens, const HubConfig& hub) {
  const uint64_t groups = std::max<uint64_t>(1, std::min<uint64_t>(tokens, hub.dam.table_entries));
  return static_cast<uint32_t>((tokens + groups - 1) / groups);
}

namespace {
// `value` (what the workload needs) must be below 2^bits of the named field.
void require_width(const char* key, uint64_t value, uint32_t bits, const std::string& what) {
  if (bits >= 64 || value < (uint64_t{1} << bits)) return;
  throw UserError(key, fmt::format("{} needs {} bits; the hub has {} (set {} >= {})", what, std::bit_width(value), bits,
                                   key, std::bit_width(value)));
}
}  // namespace

void HubSizing::check(const MoeHubParams& p, const HubConfig& hub, const Workload& w, bool dam) const {
  (void)p;
  // Each row's stores start at RowOffset 0 (data) and row_bytes (metadata); the store tag
  // (HubTag) has 16 bits for a store's starting RowOffset.
  if (row_bytes >= (uint64_t{1} << 16)) {
    throw UserError("model.hidden", fmt::format("rows of {} B: st.rowsp stores start at most 65535 B into a row "
                                                "(the store tag's 16-bit RowOffset)", row_bytes));
  }
  const uint64_t rows = static_cast<uint64_t>(w.routing().rows());  // RowIDs 0 .. rows - 1
  if (rows > (uint64_t{1} << 32)) {
    throw UserError("run.tokens", fmt::format("{} routed rows: the st.rowsp tag carries a 32-bit RowID", rows));
  }
  require_width("hub.rat.row_id_bits", rows - 1, hub.aau.row_id_bits, fmt::format("RowID {}", rows - 1));
  require_width("hub.rat.local_row_id_bits", capacity - 1, hub.aau.local_row_id_bits,
                fmt::format("a region of {} rows", capacity));
  require_width("hub.rat.row_offset_bits", row_size - 1, hub.aau.row_offset_bits, fmt::format("a row of {} B", row_size));
  size_t most_local = 0;
  uint64_t most_tokens = 0;
  for (int64_t g = 0; g < w.tokens().gpus(); ++g) {
    most_local = std::max(most_local, w.placement().local_experts(static_cast<int>(g)).size());
    most_tokens = std::max(most_tokens, static_cast<uint64_t>(w.tokens().count(g)));
  }
  if (most_local > hub.aau.apt_entries) {
    throw UserError("hub.apt.entries", fmt::format("a GPU with {} local experts needs {} live regions; the APT has {}",
                                                   most_local, most_local, hub.aau.apt_entries));
  }
  if (!dam) return;
  if (groups_per_region * most_local > hub.dam.table_entries) {
    throw UserError("hub.dam.table_entries", fmt::format("{} local experts of {} M-tiles need {} dependency entries; the "
                                                         "table has {}", most_local, tiles_m, most_local * groups_per_region,
                                                         hub.dam.table_entries));
  }
  require_width("hub.dam.counter_bits", tiles_per_group * bm * row_bytes, hub.dam.counter_bits,
                fmt::format("a GEMM1 DAM group of {} B ({} rows)", tiles_per_group * bm * row_bytes, tiles_per_group * bm));
  const uint64_t k = static_cast<uint64_t>(w.model().top_k());
  const uint64_t scaling_group = uint64_t{tokens_per_group(most_tokens, hub)} * k * row_bytes;
  require_width("hub.dam.counter_bits", scaling_group, hub.dam.counter_bits,
                fmt::format("a scaling DAM group of {} B", scaling_group));
  require_width("hub.dam.global_counter_bits", most_tokens * k * row_bytes, hub.dam.global_counter_bits,
                fmt::format("a combine of {} B", most_tokens * k * row_bytes));
}

void MoeHubSystemImpl::check(const Config& config, const Workload& workload) const {
  HubSizing::of(p_, hub_, gpu::GpuConfig::from(config), workload).check(p_, hub_, workload, v_.dam);
}

void MoeHubSystemImpl::build(Cluster& cluster) {
  cluster_ = &cluster;
  const ModelShape& m = cluster.model();
  const HubSizing z = HubSizing::of(p_, hub_, cluster.gpu_config(), cluster.workload());
  z.check(p_, hub_, cluster.workload(), v_.dam);
  row_bytes_ = z.row_bytes;
  row_size_ = z.row_size;
  bm_ = z.bm;
  bn_ = cluster.gpu_config().gemm_tile.n;
  capacity_ = z.capacity;
  tiles_m_ = z.tiles_m;
  tiles_per_group_ = z.tiles_per_group;
  groups_per_region_ = z.groups_per_region;
  tiles_n1_ = (static_cast<uint64_t>(m.gemm1_cols()) + bn_ - 1) / bn_;
  const int n = cluster.gpus();
  fabric_ = std::make_unique<HubFabric>(
      cluster, hub_, HubFabricConfig{v_.rpm, p_.dispatch_transaction_bytes, p_.epilogue_transaction_bytes}, *this);
  kernels_ = std::make_unique<SharedKernels>(cluster);
  region_of_expert_.assign(static_cast<size_t>(m.experts()), MallocId{});
  gpus_.resize(n);
  fn_ = MoeHubFunctional::make(cluster, capacity_, row_bytes_, bm_);
  trace_.reset(static_cast<uint64_t>(cluster.workload().routing().rows()), row_bytes_, bm_, tiles_n1_,
               static_cast<size_t>(n));
}

// The hardware side of one consumer GPU after its program made its regions: flags, the DAM
// contexts the compiler programs from the GEMM1 and scaling tilings.
void MoeHubSystemImpl::prepare_gpu(int g) {
  Cluster& c = *cluster_;
  HubGpu& h = gpus_[g];
  const int64_t tokens = c.workload().tokens().count(g);
  const int64_t k = c.model().top_k();
  trace_.add_regions(g, h.regions.size(), tiles_m_);
  if (software_counts()) {
    h.fence = c.gpu(g).create_signal("rows landed (release fence)");
    h.counts_in = c.gpu(g).create_signal("row counts in");
    h.combine_fence = c.gpu(g).create_signal("result rows landed (release fence)");
    h.combine_flags_in = c.gpu(g).create_signal("combine-done flags in");
  }
  for (size_t li = 0; li < h.regions.size(); ++li) {
    HubRegion& r = h.regions[li];
    r.source.assign(capacity_, -1);
    for (uint64_t m = 0; m < tiles_m_; ++m) {
      r.data_flag.push_back(c.gpu(g).create_signal(fmt::format("e{}.tile{}.data", r.expert, m)));
      r.meta_flag.push_back(c.gpu(g).create_signal(fmt::format("e{}.tile{}.meta", r.expert, m)));
    }
  }
  // Scaling blocks: at most one DAM table of groups, at most one per token.
  h.tokens_per_group = HubSizing::tokens_per_group(static_cast<uint64_t>(tokens), hub_);
  const uint64_t slots = static_cast<uint64_t>(tokens * k);
  if (v_.dam) {
    h.dam_gemm1 = std::make_unique<DataAvailabilityManager>(c.sim(), hub_.dam, [this, g](const DamSignal& s) { on_gemm1_signal(g, s); });
    for (size_t li = 0; li < h.regions.size(); ++li) {
      h.dam_gemm1->add_tiling(ConsumerTiling{h.regions[li].base, row_size_, row_bytes_, bm_ * tiles_per_group_, capacity_,
                                             static_cast<uint32_t>(li * groups_per_region_)});
    }
    // The scaling kernel's own context: its groups are token ranges of the combine slots.
    h.dam_scaling = std::make_unique<DataAvailabilityManager>(c.sim(), hub_.dam, [this, g](const DamSignal& s) {
      HubGpu& hg = gpus_[g];
      if (s.kind == DamSignalKind::Retired) cluster_->gpu(g).retire(hg.scaling, s.group);
      else cluster_->gpu(g).release(hg.scaling, s.group);
      ++dam_blocks_;
    });
    if (slots > 0) {
      h.dam_scaling->add_tiling(ConsumerTiling{HubAddressMap::kCombineBase, row_bytes_, row_bytes_,
                                               static_cast<uint64_t>(h.tokens_per_group) * static_cast<uint64_t>(k), slots, 0});
      h.dam_scaling->set_expected_total(slots * row_bytes_);
    }
  } else {
    const uint64_t blocks = (static_cast<uint64_t>(tokens) + h.tokens_per_group - 1) / h.tokens_per_group;
    for (uint64_t b = 0; b < blocks; ++b) h.combine_flag.push_back(c.gpu(g).create_signal(fmt::format("combine{}", b)));
  }
}

void MoeHubSystemImpl::on_gemm1_signal(int g, const DamSignal& s) {
  HubGpu& h = gpus_[g];
  const uint64_t li = s.group / groups_per_region_, first = s.group % groups_per_region_ * tiles_per_group_;
  const uint64_t experts = h.regions.size();
  for (uint64_t m = first; m < std::min(tiles_m_, first + tiles_per_group_); ++m) {
    if (s.kind != DamSignalKind::Retired) trace_.released(g, li, m, cluster_->sim().now());
    for (uint64_t n = 0; n < tiles_n1_; ++n) {
      const auto block = static_cast<uint32_t>((m * experts + li) * tiles_n1_ + n);
      if (s.kind == DamSignalKind::Retired) cluster_->gpu(g).retire(h.gemm1, block);
      else cluster_->gpu(g).release(h.gemm1, block);
      ++dam_blocks_;
    }
  }
}

void MoeHubSystemImpl::on_landed(int g, const LandedWrite& w) {
  Cluster& c = *cluster_;
  HubGpu& h = gpus_[g];
  const int64_t k = c.model().top_k();
  if (w.rowsp) {
    size_t li = 0;
    while (li < h.regions.size() && h.regions[li].id.region() != w.region) ++li;
    if (li == h.regions.size()) throw std::logic_error(fmt::format("GPU {}: st.rowsp landed in unknown region {}", g, w.region));
    HubRegion* r = &h.regions[li];
    const uint64_t lr = w.local_row_id;
    const uint64_t m = lr / bm_;
    r->rows_allocated = std::max(r->rows_allocated, lr + 1);
    if (software_counts()) c.gpu(w.src).signal_add(gpus_[w.src].fence, w.bytes);
    if (source_chunks()) chunk_row_landed(g, w, li, m);
    if (v_.dam) h.dam_gemm1->on_write_ack(w.address, w.bytes);
    if (w.nop) {  // the source-metadata column: which RowID this LocalRowID holds
      r->source[lr] = static_cast<int64_t>(w.row_id);
      c.gpu(g).signal_add(r->meta_flag[m], w.bytes);
      return;
    }
    r->data_landed += w.bytes;
    if (!v_.dam && !source_chunks()) c.gpu(g).signal_add(r->data_flag[m], w.bytes);
    fn_->row_slice(g, li, w);
    trace_.landed(g, li, lr, w.row_id, w.bytes, c.sim().now());
    check_all_arrived(g);
    return;
  }
  if (w.address >= HubAddressMap::kTailAddress) {  // a routing block's release (source chunks)
    chunk_tail_landed(g, w);
    return;
  }
  if (w.address >= HubAddressMap::kCombineFlagAddress) {  // an expert GPU's combine-done flag
    c.gpu(g).signal_add(h.combine_flags_in, w.bytes);
    return;
  }
  if (w.address >= HubAddressMap::kCountAddress) {  // a producer's row counts for this GPU's experts
    h.report_bytes += w.bytes;
    if (software_counts()) c.gpu(g).signal_add(h.counts_in, w.bytes);
    if (h.report_bytes == static_cast<uint64_t>(c.gpus()) * kRowCountBytes * h.regions.size()) {
      h.reports_in = true;
      uint64_t total = 0;
      for (HubRegion& r : h.regions) {
        for (int src = 0; src < c.gpus(); ++src) r.expected_rows += static_cast<uint64_t>(c.workload().plan().rows_to_expert(src, r.expert));
        total += r.expected_rows;
      }
      if (v_.dam) h.dam_gemm1->set_expected_total(total * row_bytes_);
      check_all_arrived(g);
    }
    return;
  }
  // GEMM2's result for one of this GPU's combine slots.
  const uint64_t slot = (w.address - HubAddressMap::kCombineBase) / row_bytes_;
  h.combine_landed += w.bytes;
  if (software_counts()) c.gpu(w.src).signal_add(gpus_[w.src].combine_fence, w.bytes);
  if (v_.dam) h.dam_scaling->on_write_ack(w.address, w.bytes);
  else c.gpu(g).signal_add(h.combine_flag[slot / static_cast<uint64_t>(k) / h.tokens_per_group], w.bytes);
  fn_->combine_slice(g, slot, w);
  const uint64_t slots = static_cast<uint64_t>(c.workload().tokens().count(g) * k);
  if (h.combine_landed == slots * row_bytes_) c.phases(g).combine_end = c.sim().now();
}

// Every expected data byte has landed. Polling consumers learn it from an all-arrived flag read
// with their tile counter (bumped here to their threshold, so the loop exits and reads the count).
void MoeHubSystemImpl::check_all_arrived(int g) {
  HubGpu& h = gpus_[g];
  if (h.all_arrived || !h.reports_in) return;
  for (const HubRegion& r : h.regions) {
    if (r.data_landed < r.expected_rows * row_bytes_) return;
  }
  h.all_arrived = true;
  cluster_->phases(g).dispatch_end = cluster_->sim().now();
  trace_.all_arrived(g, cluster_->sim().now());
  if (v_.dam) return;
  for (HubRegion& r : h.regions) {
    for (const gpu::SignalId f : r.data_flag) cluster_->gpu(g).signal_add(f, static_cast<int64_t>(bm_ * row_bytes_));
  }
}

// Valid rows of M-tile m: a full tile until the count is known (all arrived / AllReady).
uint64_t MoeHubSystemImpl::tile_rows(int g, size_t li, uint64_t m) const {
  const HubGpu& h = gpus_[g];
  const bool known = v_.dam ? h.dam_gemm1->all_ready_time().has_value() : h.all_arrived;
  if (!known) return bm_;
  const uint64_t total = h.regions[li].expected_rows;
  return total <= m * bm_ ? 0 : std::min<uint64_t>(bm_, total - m * bm_);
}

void MoeHubSystemImpl::begin_work(int g, bool scaling) {
  HubGpu& h = gpus_[g];
  uint32_t& n = scaling ? h.scaling_blocks : h.computing;
  if (n++ == 0) (scaling ? h.scaling_since : h.computing_since) = cluster_->sim().now();
  if (!scaling && !h.first_tile) h.first_tile = cluster_->sim().now();
  if (scaling && !h.first_scaling) h.first_scaling = cluster_->sim().now();
}

void MoeHubSystemImpl::end_work(int g, bool scaling) {
  HubGpu& h = gpus_[g];
  uint32_t& n = scaling ? h.scaling_blocks : h.computing;
  if (--n == 0) {
    cluster_->log(g, scaling ? Activity::Scaling : Activity::ExpertCompute, scaling ? h.scaling_since : h.computing_since,
                  cluster_->sim().now());
  }
}

std::vector<std::string> MoeHubSystemImpl::conservation_violations(Cluster& cluster) const {
  std::vector<std::string> v;
  // Every routed row (local ones included) got exactly one LocalRowID at its destination.
  uint64_t placed = 0;
  for (int g = 0; g < cluster.gpus(); ++g) placed += fabric_->aau(g).counters().rows_allocated;
  const auto rows = static_cast<uint64_t>(cluster.workload().routing().rows());
  if (placed != rows) v.push_back(fmt::format("{} rows placed by the AAUs for {} routed rows", placed, rows));
  for (std::string& s : fabric_->internode_violations()) v.push_back(std::move(s));
  for (int g = 0; g < gpus_.size(); ++g) {
    for (const auto* dam : {gpus_[g].dam_gemm1.get(), gpus_[g].dam_scaling.get()}) {
      if (dam && !dam->every_group_signalled_once()) v.push_back(fmt::format("a DAM group of GPU {} was not signalled exactly once", g));
    }
  }
  return v;
}

nlohmann::json MoeHubSystemImpl::stats(Cluster& cluster) {
  const HubFabricCounters f = fabric_->counters();
  const uint32_t entry = hub_.rpm.entry_bytes;
  nlohmann::json egress = EgressCounters::table().to_json(f.egress);
  const double fill = packet_fill(f.egress.payload_bytes, f.egress.packets, entry);
  egress["mean_packet_fill"] = fill;
  nlohmann::json hub{{"aau", AauCounters::table().to_json(f.aau)}, {"egress", egress}};
  if (f.rpm) {
    hub["rpm"] = RpmCounters::table().to_json(*f.rpm);
    hub["rpm"]["mean_packet_fill"] = f.rpm->mean_packet_fill(entry);
  }
  hub["rat_hits"] = f.aau.rat_hits;
  hub["rat_misses"] = f.aau.rat_misses;
  hub["rat_evictions"] = f.aau.rat_evictions;
  hub["rat_restores"] = f.aau.rat_restores;
  hub["region_overflow_writes"] = f.aau.region_overflow_writes;
  hub["packets"] = f.egress.packets;
  hub["mean_packet_fill"] = fill;
  hub["rpm_merges"] = f.rpm ? f.rpm->merges : uint64_t{0};
  uint64_t polls = 0, avoided = 0;
  DamCounters dam;
  for (int g = 0; g < cluster.gpus(); ++g) {
    polls += cluster.gpu(g).counters().polls;
    avoided += cluster.gpu(g).counters().poll_loads_avoided;
    const HubGpu& h = gpus_[static_cast<size_t>(g)];
    for (const auto* d : {h.dam_gemm1.get(), h.dam_scaling.get()}) {
      if (d) DamCounters::table().add(dam, d->counters());
    }
  }
  hub["polls"] = polls;
  // Flag loads the blocks that waited in hardware would have issued polling over the same wait.
  hub["poll_loads_avoided"] = avoided;
  // Thread blocks that waited for data without being resident (released or retired by the
  // DAM): each would have been a polling block in a software-orchestrated design.
  hub["dam_released_or_retired_blocks"] = dam_blocks_;
  if (v_.dam) {
    hub["dam"] = DamCounters::table().to_json(dam);
    hub["dam_releases"] = dam.releases + dam.partial_releases;
    hub["dam_retired_groups"] = dam.retired_groups;
  }
  if (!selectors_.empty()) hub["replica"] = replica_stats(cluster);
  if (f.internode) {
    hub["internode"] = InternodeCounters::table().to_json(*f.internode);
    hub["internode"]["relay_peak_bytes"] = f.relay_peak_bytes;
  }
  hub["region_capacity_rows"] = capacity_;
  hub["gemm1_tiles_per_dam_group"] = tiles_per_group_;
  // Per GPU: when its first GEMM1 tile started and when its last dispatched row landed
  // (overlap: the first before the second).
  nlohmann::json first = nlohmann::json::array(), last = nlohmann::json::array();
  for (int g = 0; g < cluster.gpus(); ++g) {
    const auto& t = gpus_[static_cast<size_t>(g)].first_tile;
    const auto& d = cluster.phases(g).dispatch_end;
    first.push_back(t ? nlohmann::json(t->us()) : nlohmann::json(nullptr));
    last.push_back(d ? nlohmann::json(d->us()) : nlohmann::json(nullptr));
  }
  hub["gemm1_first_tile_us"] = first;
  hub["dispatch_end_us"] = last;
  software_signal_stats(cluster, hub);
  hub["dispatch_latency"] = trace_.to_json();
  return {{"hub", hub}};
}

}  // namespace moehub

namespace moehub {
std::unique_ptr<MoeSystem> make_moehub_system(const Config& config, MoeHubVariant variant) {
  return std::make_unique<MoeHubSystemImpl>(config, variant);
}
}  // namespace moehub
