#include "systems/moehub/dispatch_trace.h"

#include <algorithm>
#include <stdexcept>

#include "systems/moehub/moehub_state.h"

namespace moehub {

void DispatchTrace::reset(uint64_t rows, uint64_t row_bytes, uint64_t bm, uint64_t blocks_per_tile, size_t gpus) {
  issued_ps_.assign(rows, -1);
  landed_bytes_.assign(rows, 0);
  tiles_.assign(gpus, {});
  consumers_.assign(gpus, {});
  row_bytes_ = row_bytes;
  bm_ = bm;
  blocks_per_tile_ = blocks_per_tile;
  rows_landed_ = 0;
  producer_sum_ps_ = polling_ps_ = compute_ps_ = 0;
}

void DispatchTrace::add_regions(int g, size_t regions, uint64_t tiles_per_region) {
  tiles_.at(static_cast<size_t>(g)).assign(regions, std::vector<Tile>(tiles_per_region));
}

void DispatchTrace::issued(uint64_t row, Time now) {
  if (issued_ps_.at(row) < 0) issued_ps_[row] = now.ps();
}

void DispatchTrace::landed(int g, size_t region, uint64_t local_row, uint64_t row, uint64_t bytes, Time now) {
  uint32_t& in = landed_bytes_.at(row);
  in += static_cast<uint32_t>(bytes);
  if (in != row_bytes_) return;
  if (issued_ps_[row] < 0) throw std::logic_error("dispatch trace: a row landed before it was issued");
  Tile& t = tiles_.at(static_cast<size_t>(g)).at(region).at(local_row / bm_);
  ++t.rows;
  t.landed_sum_ps += now.ps();
  if (t.rows == bm_) t.complete = now;
  ++rows_landed_;
  producer_sum_ps_ += now.ps() - issued_ps_[row];
  Consumer& c = consumers_.at(static_cast<size_t>(g));
  ++c.rows;
  c.landed_sum_ps += now.ps();
  c.last_ps = std::max(c.last_ps, now.ps());
}

void DispatchTrace::all_arrived(int g, Time now) {
  for (auto& region : tiles_.at(static_cast<size_t>(g))) {
    for (Tile& t : region) {
      if (t.rows > 0 && !t.complete) t.complete = now;
    }
  }
}

void DispatchTrace::released(int g, size_t region, uint64_t tile, Time now) {
  Tile& t = tiles_.at(static_cast<size_t>(g)).at(region).at(tile);
  if (!t.released) t.released = now;
}

void DispatchTrace::tile_started(int g, size_t region, uint64_t tile, Time now, std::optional<Time> on_sm_since) {
  Tile& t = tiles_.at(static_cast<size_t>(g)).at(region).at(tile);
  if (!t.complete) return;  // a block that ran ahead of its rows (not expected): left out
  const Time complete = *t.complete;
  // A gated block became eligible at its release; a polling one when both its data and its SM were there.
  const Time eligible = on_sm_since ? std::max(complete, *on_sm_since) : t.released.value_or(complete);
  const Time signal_end = on_sm_since ? now : eligible;
  t.signal_sum_ps += (signal_end - (on_sm_since ? eligible : complete)).ps();
  t.sm_wait_sum_ps += (on_sm_since ? eligible - complete : now - eligible).ps();
  ++t.starts;
}

nlohmann::json DispatchTrace::to_json() const {
  // Per row: tile assembly = complete - landed; signal and SM wait: its tile's means over blocks.
  double assembly_ps = 0, signal_ps = 0, sm_wait_ps = 0;
  uint64_t rows = 0;
  for (const auto& gpu : tiles_) {
    for (const auto& region : gpu) {
      for (const Tile& t : region) {
        if (t.rows == 0 || !t.complete || t.starts != blocks_per_tile_) continue;
        const double complete = static_cast<double>(t.complete->ps());
        const double n = static_cast<double>(t.rows);
        assembly_ps += n * complete - static_cast<double>(t.landed_sum_ps);
        signal_ps += n * static_cast<double>(t.signal_sum_ps) / static_cast<double>(t.starts);
        sm_wait_ps += n * static_cast<double>(t.sm_wait_sum_ps) / static_cast<double>(t.starts);
        rows += t.rows;
      }
    }
  }
  const auto mean_us = [](double ps, uint64_t n) { return n ? ps / static_cast<double>(n) * 1e-6 : 0.0; };
  const double polling_us = static_cast<double>(polling_ps_) * 1e-6, compute_us = static_cast<double>(compute_ps_) * 1e-6;
  nlohmann::json rows_in = nlohmann::json::array(), last = nlohmann::json::array(), mean = nlohmann::json::array();
  for (const Consumer& c : consumers_) {
    rows_in.push_back(c.rows);
    last.push_back(static_cast<double>(c.last_ps) * 1e-6);
    mean.push_back(mean_us(static_cast<double>(c.landed_sum_ps), c.rows));
  }
  return {{"rows_in", rows_in},
          {"last_row_landed_us", last},
          {"mean_row_landed_us", mean},
          {"rows", rows_landed_},
          {"producer_us", mean_us(static_cast<double>(producer_sum_ps_), rows_landed_)},
          {"tile_assembly_us", mean_us(assembly_ps, rows)},
          {"signal_us", mean_us(signal_ps, rows)},
          {"sm_wait_us", mean_us(sm_wait_ps, rows)},
          {"gemm1_polling_block_us", polling_us},
          {"gemm1_compute_block_us", compute_us},
          {"gemm1_polling_share", polling_us + compute_us > 0 ? polling_us / (polling_us + compute_us) : 0.0}};
}

// The moehub systems' hooks into the trace, kept beside it (outside the system's own files, so
// that the Table I line count of the system's program does not count measurement code).

// A row's data store: noted for the dispatch trace (Fig. 6), then issued as st.rowsp.
gpu::Step MoeHubSystemImpl::issue_row(const RowspStore& s) {
  trace_.issued(s.row_id, cluster_->sim().now());
  return st_rowsp(fabric_->registry(), s);
}

// A polling GEMM1 block took its SM with this wait: the trace counts its resident wait from here.
gpu::Step MoeHubSystemImpl::on_sm(gpu::BlockState& b, gpu::Step wait) {
  b.user = static_cast<uint64_t>(cluster_->sim().now().ps());
  return wait;
}

Time MoeHubSystemImpl::since(const gpu::BlockState& b) const {
  return cluster_->sim().now() - Time::from_ps(static_cast<int64_t>(b.user));
}

gpu::Step MoeHubSystemImpl::tile_exit(gpu::BlockState& b) {
  if (!v_.dam) trace_.polled(since(b));
  return gpu::Step::done();
}

void MoeHubSystemImpl::begin_tile(int g, gpu::BlockState& b, size_t li, uint64_t m) {
  const std::optional<Time> on_sm = v_.dam ? std::nullopt : std::optional<Time>(Time::from_ps(static_cast<int64_t>(b.user)));
  if (on_sm) trace_.polled(since(b));
  trace_.tile_started(g, li, m, cluster_->sim().now(), on_sm);
  b.user = static_cast<uint64_t>(cluster_->sim().now().ps());
  begin_work(g, false);
}

void MoeHubSystemImpl::end_tile(int g, gpu::BlockState& b) {
  trace_.computed(since(b));
  end_work(g, false);
}

}  // namespace moehub
