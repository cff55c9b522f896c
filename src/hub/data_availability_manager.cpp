#include "hub/data_availability_manager.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

namespace {
// The first group slot whose id is not below `id` (groups are sorted by id).
template <typename Slots>
auto first_not_below(Slots& slots, uint32_t id) {
  return std::lower_bound(slots.begin(), slots.end(), id, [](const auto& s, uint32_t v) { return s.id < v; });
}
// The group with this id, or null.
template <typename Slots>
auto* group_in(Slots& slots, uint32_t id) {
  const auto it = first_not_below(slots, id);
  return it != slots.end() && it->id == id ? &it->group : nullptr;
}
}  // namespace

const char* dam_signal_name(DamSignalKind kind) {
  switch (kind) {
    case DamSignalKind::Ready: return "ready";
    case DamSignalKind::PartialReady: return "partial_ready";
    case DamSignalKind::Retired: return "retired";
  }
  return "unknown";
}

DataAvailabilityManager::DataAvailabilityManager(Simulator& sim, const DamConfig& config, SignalHook signal)
    : sim_(sim), cfg_(config), clock_(config.clock), signal_(std::move(signal)), table_(config.table_entries) {
  if (!signal_) throw std::logic_error("DataAvailabilityManager: no signal hook");
}

void DataAvailabilityManager::check_counter_width(uint64_t value, const char* key, uint32_t bits) const {
  if (bits < 64 && value >= (uint64_t{1} << bits)) {
    throw UserError(key, fmt::format("{} B does not fit a {}-bit counter", value, bits));
  }
}

void DataAvailabilityManager::add_entry(const DependencyEntry& e) {
  const auto it = first_not_below(groups_, e.group);
  const bool known = it != groups_.end() && it->id == e.group;
  const uint64_t threshold = (known ? it->group.threshold : 0) + e.threshold_bytes;
  check_counter_width(threshold, "hub.dam.counter_bits", cfg_.counter_bits);
  table_.add(e);
  if (known) {
    it->group.threshold = threshold;
  } else {
    groups_.insert(it, GroupSlot{e.group, Group{threshold, 0, false}});
    last_group_ = nullptr;
  }
}

uint32_t DataAvailabilityManager::add_tiling(const ConsumerTiling& t) {
  DependencyTable probe(table_.capacity());
  const uint32_t tiles = probe.add_tiling(t);  // UserError here leaves this table untouched
  if (table_.entries().size() + tiles > table_.capacity()) {
    throw UserError("hub.dam.table_entries", fmt::format("the consumer kernel needs {} dependency entries; the table has {}",
                                                         table_.entries().size() + tiles, table_.capacity()));
  }
  for (const DependencyEntry& e : probe.entries()) add_entry(e);
  return tiles;
}

void DataAvailabilityManager::set_expected_total(uint64_t bytes) {
  check_counter_width(bytes, "hub.dam.global_counter_bits", cfg_.global_counter_bits);
  expected_ = bytes;
  sim_.schedule_in(Time::zero(), [this, epoch = epoch_] {
    if (epoch == epoch_) maybe_all_ready();
  });
}

void DataAvailabilityManager::reset() {
  table_.clear();
  groups_.clear();
  last_group_ = nullptr;
  expected_.reset();
  global_ = 0;
  all_ready_at_.reset();
  signals_.clear();
  pipeline_.clear();
  ++epoch_;
}

void DataAvailabilityManager::on_write_ack(uint64_t address, uint64_t bytes) {
  ++n_.acks;
  // The table lookup and counter update take lookup_cycles; a constant delay keeps acks in order.
  const Time at = clock_.time_of(clock_.cycle_at_or_after(sim_.now()) + cfg_.lookup_cycles);
  const bool scheduled = !pipeline_.empty() && pipeline_.back().at == at;
  pipeline_.push_back(PendingAck{at, address, bytes});
  if (scheduled) return;  // the cycle's event is already pending
  sim_.schedule_at(at, [this, epoch = epoch_] {
    if (epoch == epoch_) drain_pipeline();
  });
}

void DataAvailabilityManager::drain_pipeline() {
  const Time now = sim_.now();
  while (!pipeline_.empty() && pipeline_.front().at <= now) {
    const PendingAck a = pipeline_.front();
    pipeline_.pop_front();
    process_ack(a.address, a.bytes);
  }
}

void DataAvailabilityManager::process_ack(uint64_t address, uint64_t bytes) {
  if (all_ready_at_) ++n_.acks_after_all_ready;
  uint64_t counted_once = 0;
  bool matched = false;
  table_.for_each_overlap(address, bytes, [&](const DependencyEntry& e, uint64_t counted) {
    matched = true;
    counted_once = std::max(counted_once, counted);
    Group& g = group(e.group);
    g.counter += counted;
    if (!g.signalled && g.counter >= g.threshold) emit(e.group, g, DamSignalKind::Ready);
  });
  if (!matched) {
    n_.unmatched_ack_bytes += bytes;
    return;
  }
  global_ += counted_once;
  maybe_all_ready();
}

DataAvailabilityManager::Group& DataAvailabilityManager::group(uint32_t id) {
  if (last_group_ == nullptr || last_group_id_ != id) {
    last_group_ = group_in(groups_, id);
    if (last_group_ == nullptr) throw std::logic_error(fmt::format("DAM: no group {}", id));
    last_group_id_ = id;
  }
  return *last_group_;
}

void DataAvailabilityManager::emit(uint32_t group, Group& g, DamSignalKind kind) {
  g.signalled = true;
  if (kind == DamSignalKind::Ready) ++n_.releases;
  if (kind == DamSignalKind::PartialReady) ++n_.partial_releases;
  if (kind == DamSignalKind::Retired) ++n_.retired_groups;
  signals_.push_back(DamSignal{group, kind, sim_.now(), g.counter});
  signal_(signals_.back());
}

void DataAvailabilityManager::maybe_all_ready() {
  if (all_ready_at_ || !expected_ || global_ < *expected_) return;
  all_ready_at_ = sim_.now();
  for (GroupSlot& s : groups_) {
    if (s.group.signalled) continue;
    emit(s.id, s.group, s.group.counter > 0 ? DamSignalKind::PartialReady : DamSignalKind::Retired);
  }
}

uint64_t DataAvailabilityManager::counter(uint32_t group) const {
  const Group* g = group_in(groups_, group);
  return g ? g->counter : 0;
}

DamCounters DataAvailabilityManager::counters() const {
  DamCounters c = n_;
  c.counted_bytes = global_;
  return c;
}

}  // namespace moehub
