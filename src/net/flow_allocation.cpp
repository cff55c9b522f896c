#include "net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The flow network's max-min allocation (progressive filling over connected components), and
// the stated reduction net.flow_realloc_interval.

namespace moehub {

namespace {
// The allocation visits tens of thousands of classes per pass in no order memory likes (by a
// resource's list, by formation), each a cache miss: it asks for a class a few entries
// ahead. A hint only: what is computed does not change.
constexpr size_t kAhead = 8;
inline void prefetch_line(const void* p) {
#if defined(__GNUC__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}
}  // namespace

// A change (a class formed or drained, or a class's weight changed) touches the resources the
// class loads: the next allocation recomputes only their connected components.
void FlowNetwork::touch(const FlowClass& c) {
  for (uint32_t k = 0; k < c.load_count; ++k) seeds_.push_back(c.loads[k].resource);
  dirty_ = true;
}

// With net.flow_realloc_interval > 0 (a stated reduction), the components are filled again at
// most once per interval; a change in between refills only the classes formed since the last
// full allocation, over the capacity the others leave (reallocate_provisional). With
// net.flow_realloc_per_class (a stated reduction) the wait after a full allocation grows with
// the classes it filled, so its cost per simulated time stays bounded however large the
// components grow.
void FlowNetwork::reallocate() {
  const int64_t now = sim_.now().ps();
  dirty_ = false;
  const int64_t interval = cfg_.flow_realloc_interval.ps();
  if (interval > 0 && last_full_ps_ >= 0 && now < last_full_ps_ + full_gap_ps_) {
    reallocate_provisional(now);
    return;
  }
  const size_t filled = reallocate_components(now);
  full_gap_ps_ = std::max(interval, cfg_.flow_realloc_per_class.ps() * static_cast<int64_t>(filled));
  last_full_ps_ = now;
  provisional_.clear();
  seeds_seen_ = 0;
}

// Max-min rates decompose over connected components (classes joined by the resources they
// share): a component's allocation does not depend on any other. So only the components of the
// touched resources are filled again, each on its own, and each the same way whatever else
// changed: its classes in order of formation, its resources in index order. Returns the number
// of classes filled.
size_t FlowNetwork::reallocate_components(int64_t now) {
  Scratch& w = scratch_;
  w.seen_res.resize(resources_.size(), 0);
  w.seen_cls.resize(classes_.size(), 0);
  w.visited_res.clear();
  w.visited_cls.clear();
  size_t filled = 0;
  for (const uint32_t seed : seeds_) {
    if (w.seen_res[seed]) continue;
    collect_component(seed);
    filled += w.comp_cls.size();
    fill_component(now);
  }
  for (const uint32_t r : w.visited_res) w.seen_res[r] = 0;
  for (const uint32_t slot : w.visited_cls) w.seen_cls[slot] = 0;
  seeds_.clear();
  account_busy(now);
  return filled;
}

// Opens a resource's busy period when it gains load and closes it (statistics, timeline) when
// it loses all of it. Only the refilled components' resources can have changed load; they are
// visited in index order, as a walk over every resource would.
void FlowNetwork::account_busy(int64_t now) {
  std::vector<uint32_t>& visited = scratch_.visited_res;
  std::sort(visited.begin(), visited.end());
  for (const uint32_t i : visited) {
    Resource& r = resources_[i];
    if (r.load > 0 && r.busy_since < 0) {
      r.busy_since = now;
    } else if (r.load == 0 && r.busy_since >= 0) {
      r.busy_ps += now - r.busy_since;
      if (trace_) trace_busy(i, r.busy_since, now);
      r.busy_since = -1;
    }
  }
}

// The resources and classes connected to `seed` (depth first), then in allocation order.
void FlowNetwork::collect_component(uint32_t seed) {
  Scratch& w = scratch_;
  w.comp_cls.clear();
  w.comp_res.clear();
  w.stack.assign(1, seed);
  w.seen_res[seed] = 1;
  while (!w.stack.empty()) {
    const uint32_t r = w.stack.back();
    w.stack.pop_back();
    w.comp_res.push_back(r);
    const std::vector<OnResource>& listed = res_classes_[r];
    for (size_t i = 0; i < listed.size(); ++i) {
      if (i + kAhead < listed.size()) {
        prefetch_line(&slot_loads_[listed[i + kAhead].slot]);
        if ((i & 3) == 0) prefetch_line(listed.data() + std::min(i + 2 * kAhead, listed.size() - 1));  // the list, further on
      }
      const uint32_t slot = listed[i].slot;
      if (w.seen_cls[slot]) continue;
      w.seen_cls[slot] = 1;
      w.comp_cls.push_back(slot);
      const SlotLoads& c = slot_loads_[slot];
      for (uint32_t k = 0; k < c.count; ++k) {
        const uint32_t q = c.resource[k];
        if (w.seen_res[q]) continue;
        w.seen_res[q] = 1;
        w.stack.push_back(q);
      }
    }
  }
  w.visited_res.insert(w.visited_res.end(), w.comp_res.begin(), w.comp_res.end());
  w.visited_cls.insert(w.visited_cls.end(), w.comp_cls.begin(), w.comp_cls.end());
  order_component();
  std::sort(w.comp_res.begin(), w.comp_res.end());
}

// Puts the component's classes in order of formation: a scan of order_ when the component
// holds a large share of the classes (an all-to-all joins them all), else a sort of its own.
void FlowNetwork::order_component() {
  Scratch& w = scratch_;
  if (w.comp_cls.size() * 4 < live_classes_) {
    w.keyed.clear();
    for (const uint32_t slot : w.comp_cls) w.keyed.emplace_back(classes_[slot].formed, slot);
    std::sort(w.keyed.begin(), w.keyed.end());
    for (size_t i = 0; i < w.keyed.size(); ++i) w.comp_cls[i] = w.keyed[i].second;
    return;
  }
  // Entries of drained classes (a slot may hold a later class by now) go when they outnumber
  // the live ones.
  if (order_.size() > 2 * live_classes_ + 64) std::erase_if(order_, [&](const auto& e) { return !current(e); });
  // seen_cls also marks the classes of components filled earlier in this allocation.
  w.in_comp.resize(classes_.size(), 0);
  for (const uint32_t slot : w.comp_cls) w.in_comp[slot] = 1;
  w.comp_cls.clear();
  for (const auto& e : order_) {
    if (!current(e) || !w.in_comp[e.second]) continue;
    w.in_comp[e.second] = 0;
    w.comp_cls.push_back(e.second);
  }
}

// The component's rooms and weights before the first round, and its classes' rates reset. A
// resource's classes are its list in res_classes_ (the whole list: a component holds every class
// on its resources), summed in that list's order, which is the order of formation. Resources
// are numbered within the component (j), classes by their slot.
void FlowNetwork::prepare_component() {
  Scratch& w = scratch_;
  const size_t nr = w.comp_res.size();
  w.local.resize(resources_.size());
  w.room.resize(nr);
  w.weight.resize(nr);
  w.crossing.resize(nr);  // unfrozen classes that load the resource
  w.active.clear();
  for (size_t j = 0; j < nr; ++j) {
    const uint32_t r = w.comp_res[j];
    w.local[r] = static_cast<uint32_t>(j);
    w.room[j] = resources_[r].capacity;
    double weight = 0.0;
    for (const OnResource& e : res_classes_[r]) weight += class_weight(classes_[e.slot]) * e.per_byte;
    w.weight[j] = weight;
    w.crossing[j] = static_cast<uint32_t>(res_classes_[r].size());
    if (w.crossing[j] > 0) w.active.push_back(static_cast<uint32_t>(j));
  }
  reset_rates();
}

// The provisional pass's weights and class lists per resource (only the new classes in
// comp_cls, in order of formation, on the resources in comp_res).
void FlowNetwork::prepare_provisional() {
  Scratch& w = scratch_;
  const size_t nr = w.comp_res.size();
  w.local.resize(resources_.size());
  for (size_t j = 0; j < nr; ++j) w.local[w.comp_res[j]] = static_cast<uint32_t>(j);
  w.room.resize(nr);
  w.weight.assign(nr, 0.0);
  w.crossing.assign(nr, 0);
  w.first.assign(nr + 1, 0);  // classes on resource j: on[first[j] .. first[j + 1])
  for (const uint32_t slot : w.comp_cls) {
    const FlowClass& c = classes_[slot];
    const double n = class_weight(c);
    for (uint32_t k = 0; k < c.load_count; ++k) {
      const uint32_t j = w.local[c.loads[k].resource];
      w.weight[j] += n * c.loads[k].per_byte;
      ++w.crossing[j];
    }
  }
  w.active.clear();
  for (size_t j = 0; j < nr; ++j) {
    w.first[j + 1] = w.first[j] + w.crossing[j];
    if (w.crossing[j] > 0) w.active.push_back(static_cast<uint32_t>(j));
  }
  w.on.resize(w.first[nr]);
  w.fill.assign(w.first.begin(), w.first.end() - 1);
  for (const uint32_t slot : w.comp_cls) {
    const FlowClass& c = classes_[slot];
    for (uint32_t k = 0; k < c.load_count; ++k) w.on[w.fill[w.local[c.loads[k].resource]]++] = {slot, c.loads[k].per_byte};
  }
  reset_rates();
}

// The classes to fill start unfrozen at rate 0 (scratch_.rate and frozen are by slot).
void FlowNetwork::reset_rates() {
  Scratch& w = scratch_;
  w.rate.resize(classes_.size());
  w.frozen.resize(classes_.size());
  for (const uint32_t slot : w.comp_cls) {
    w.rate[slot] = 0.0;
    w.frozen[slot] = 0;
  }
}

// Progressive filling over one component: raise every unfrozen class's rate together until
// some resource is full, freeze the classes crossing it, repeat (max-min fairness in payload
// rate). Each resource keeps the weight of the unfrozen classes crossing it, reduced as they
// freeze, so a round costs one pass over the resources rather than over the classes.
void FlowNetwork::fill_component(int64_t now) {
  prepare_component();
  fill_rounds(false);
  apply_rates(now);
}

// Copies the active resources' rooms and weights (by local index j) into the filling's
// contiguous arrays (by position, in local order), so that a round's passes read them in order.
void FlowNetwork::start_rounds() {
  Scratch& w = scratch_;
  const size_t n = w.active.size();
  w.pos.resize(resources_.size());
  w.a_room.resize(n);
  w.a_weight.resize(n);
  w.a_tol.resize(n);
  w.a_ratio.resize(n);
  w.a_cross.resize(n);
  w.a_res.resize(n);
  w.a_dead = 0;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t j = w.active[k];
    const uint32_t r = w.comp_res[j];
    w.pos[r] = static_cast<uint32_t>(k);
    w.a_room[k] = w.room[j];
    w.a_weight[k] = w.weight[j];
    w.a_tol[k] = resources_[r].capacity * 1e-12;  // full, with a relative tolerance for rounding
    w.a_cross[k] = w.crossing[j];
    w.a_res[k] = r;
  }
}

// The position of the resource that fills first (the first in local order among equal
// shares, as a scan with `<` finds it; a share that is not a number never wins: a position
// whose classes have all frozen has room NaN) and its share in `step`. Positions with no
// unfrozen class left are dropped once they are half of them, the order of the rest kept.
size_t FlowNetwork::bottleneck_position(double& step) {
  Scratch& w = scratch_;
  size_t n = w.a_room.size();
  if (w.a_dead * 2 > n) {
    double* room = w.a_room.data();
    double* weight = w.a_weight.data();
    double* tol = w.a_tol.data();
    uint32_t* cross = w.a_cross.data();
    uint32_t* res = w.a_res.data();
    uint32_t* pos = w.pos.data();
    size_t kept = 0;
    for (size_t k = 0; k < n; ++k) {
      if (cross[k] == 0) continue;
      room[kept] = room[k];
      weight[kept] = weight[k];
      tol[kept] = tol[k];
      cross[kept] = cross[k];
      res[kept] = res[k];
      pos[res[k]] = static_cast<uint32_t>(kept);
      ++kept;
    }
    n = kept;
    for (auto* v : {&w.a_room, &w.a_weight, &w.a_tol, &w.a_ratio}) v->resize(n);
    w.a_cross.resize(n);
    w.a_res.resize(n);
    w.a_dead = 0;
  }
  const double* room = w.a_room.data();
  const double* weight = w.a_weight.data();
  double* ratio = w.a_ratio.data();
  // The smallest share: `r < m ? r : m` per element (minpd's own rule, so NaN is passed over),
  // two lanes at once; then the first position that has it.
  double least = INFINITY;
  size_t k = 0;
#if defined(__SSE2__)
  __m128d m2 = _mm_set1_pd(INFINITY);
  for (; k + 2 <= n; k += 2) {
    const __m128d r = _mm_div_pd(_mm_loadu_pd(room + k), _mm_loadu_pd(weight + k));
    _mm_storeu_pd(ratio + k, r);
    m2 = _mm_min_pd(r, m2);
  }
  alignas(16) double lanes[2];
  _mm_store_pd(lanes, m2);
  least = lanes[0] < lanes[1] ? lanes[0] : lanes[1];
#endif
  for (; k < n; ++k) {
    ratio[k] = room[k] / weight[k];
    if (ratio[k] < least) least = ratio[k];
  }
  step = INFINITY;
  if (!(least < INFINITY)) return 0;
  for (k = 0; k < n; ++k) {
    if (ratio[k] == least) break;
  }
  step = ratio[k];
  return k;
}

// The rounds of the filling, from the rooms and weights that prepare_component (a component's
// classes on each resource: its res_classes_ list) or prepare_provisional (scratch_.on) left;
// the level at which each class froze goes to scratch_.rate, by slot.
void FlowNetwork::fill_rounds(bool provisional) {
  Scratch& w = scratch_;
  start_rounds();
  double level = 0;  // the rate of every unfrozen class
  size_t left = w.comp_cls.size();
  while (left > 0) {
    double step = INFINITY;
    const size_t bottleneck = bottleneck_position(step);
    if (step == INFINITY) break;
    level += step;
    w.full.clear();
    const size_t n = w.a_room.size();
    for (size_t k = 0; k < n; ++k) {
      w.a_room[k] = k == bottleneck ? 0.0 : w.a_room[k] - step * w.a_weight[k];
      if (w.a_room[k] <= w.a_tol[k]) w.full.push_back(static_cast<uint32_t>(k));
    }
    for (const uint32_t k : w.full) {  // freeze the classes on the full resources
      if (w.a_cross[k] == 0) continue;
      const uint32_t r = w.a_res[k];
      const uint32_t j = w.local[r];
      const std::vector<OnResource>& listed = res_classes_[r];
      const OnResource* on = provisional ? w.on.data() + w.first[j] : listed.data();
      const OnResource* end = provisional ? w.on.data() + w.first[j + 1] : listed.data() + listed.size();
      for (; on != end; ++on) {
        if (end - on > static_cast<std::ptrdiff_t>(kAhead)) prefetch_line(&slot_loads_[on[kAhead].slot]);
        freeze(on->slot, level, left);
      }
    }
  }
}

// Freezes a class at `level` (if not frozen yet): its weight leaves every resource it loads.
void FlowNetwork::freeze(uint32_t slot, double level, size_t& left) {
  Scratch& w = scratch_;
  if (w.frozen[slot]) return;
  w.frozen[slot] = 1;
  --left;
  w.rate[slot] = level;
  const double n = cfg_.flow_merge_pairs ? 1.0 : class_weight(classes_[slot]);
  const SlotLoads& c = slot_loads_[slot];
  for (uint32_t k = 0; k < c.count; ++k) {
    const uint32_t q = w.pos[c.resource[k]];
    w.a_weight[q] -= n * c.per_byte(k);
    if (--w.a_cross[q] == 0) {
      ++w.a_dead;
      w.a_room[q] = NAN;  // out of the filling: never the bottleneck, never full again
    }
  }
}

// Sets the rates the filling found for the component. A class or resource whose rate changes
// is first brought up to now at its old rate; a class's due time moves with its rate.
// A resource's load is summed over its list, in order of formation as the classes are.
void FlowNetwork::apply_rates(int64_t now) {
  Scratch& w = scratch_;
  const size_t nc = w.comp_cls.size();
  for (size_t i = 0; i < nc; ++i) {
    if (i + kAhead < nc) {
      const auto* ahead = reinterpret_cast<const char*>(&classes_[w.comp_cls[i + kAhead]]);
      prefetch_line(ahead);
      prefetch_line(ahead + 64);  // the members, which set_due reads
    }
    const uint32_t slot = w.comp_cls[i];
    FlowClass& c = classes_[slot];
    if (w.rate[slot] == c.rate) continue;
    c.served_base = served_at(c, now);
    c.since_ps = now;
    c.rate = w.rate[slot];
    set_due(slot, now);
  }
  for (size_t j = 0; j < w.comp_res.size(); ++j) {
    Resource& r = resources_[w.comp_res[j]];
    double load = 0.0;
    const std::vector<OnResource>& listed = res_classes_[w.comp_res[j]];
    if (j + 1 < w.comp_res.size()) prefetch_line(res_classes_[w.comp_res[j + 1]].data());
    for (size_t i = 0; i < listed.size(); ++i) {
      if (i + kAhead < listed.size()) prefetch_line(&w.rate[listed[i + kAhead].slot]);
      const OnResource& e = listed[i];
      load += class_weight(classes_[e.slot]) * w.rate[e.slot] * e.per_byte;
    }
    if (load == r.load) continue;
    r.bytes += r.load * (static_cast<double>(now - r.since_ps) / 1e12);
    r.since_ps = now;
    r.load = load;
  }
}

// Adds `delta` wire bytes per second to a resource's load, its carried bytes first brought up
// to now. A resource no live class loads carries nothing (no rounding residue is left).
void FlowNetwork::shift_load(uint32_t resource, double delta, int64_t now) {
  Resource& r = resources_[resource];
  r.bytes += r.load * (static_cast<double>(now - r.since_ps) / 1e12);
  r.since_ps = now;
  r.load = res_classes_[resource].empty() ? 0.0 : std::max(0.0, r.load + delta);
}

// Between full allocations (net.flow_realloc_interval): the classes formed since the last
// allocation (full or not) are filled max-min among themselves over the capacity the other
// classes leave, and then keep that rate, as the others keep theirs, until the next full
// allocation, which this schedules (a drained class's load leaves at once, drop_class). No link
// then carries more than its capacity; a new class may wait at rate 0. The cost is that of the
// new classes only, not of everything formed since the last full allocation.
void FlowNetwork::reallocate_provisional(int64_t now) {
  Scratch& w = scratch_;
  w.seen_res.resize(resources_.size(), 0);
  w.comp_cls.clear();
  w.comp_res.clear();
  std::erase_if(provisional_, [&](const std::pair<uint64_t, uint32_t>& e) { return !current(e); });
  for (const auto& e : provisional_) {  // in order of formation
    const FlowClass& c = classes_[e.second];
    w.comp_cls.push_back(e.second);
    for (uint32_t k = 0; k < c.load_count; ++k) {
      const uint32_t q = c.loads[k].resource;
      shift_load(q, -class_weight(c) * c.rate * c.loads[k].per_byte, now);
      if (w.seen_res[q]) continue;
      w.seen_res[q] = 1;
      w.comp_res.push_back(q);
    }
  }
  prepare_provisional();  // resources in order of first use: deterministic, no sort needed
  for (size_t j = 0; j < w.comp_res.size(); ++j) {
    const Resource& r = resources_[w.comp_res[j]];
    w.room[j] = std::max(0.0, r.capacity - r.load);
  }
  fill_rounds(true);
  for (const uint32_t slot : w.comp_cls) {
    FlowClass& c = classes_[slot];
    for (uint32_t k = 0; k < c.load_count; ++k) shift_load(c.loads[k].resource, class_weight(c) * w.rate[slot] * c.loads[k].per_byte, now);
    if (w.rate[slot] == c.rate) continue;
    c.served_base = served_at(c, now);
    c.since_ps = now;
    c.rate = w.rate[slot];
    set_due(slot, now);
  }
  provisional_.clear();
  // Busy periods: the new classes' resources and those the drains since the last pass left (a
  // resource listed twice is settled at its first visit).
  for (const uint32_t r : w.comp_res) w.seen_res[r] = 0;
  w.visited_res.assign(w.comp_res.begin(), w.comp_res.end());
  w.visited_res.insert(w.visited_res.end(), seeds_.begin() + static_cast<std::ptrdiff_t>(seeds_seen_), seeds_.end());
  seeds_seen_ = seeds_.size();
  account_busy(now);
  if (full_pending_) return;
  full_pending_ = true;
  sim_.schedule_in(Time::from_ps(last_full_ps_ + full_gap_ps_ - now), [this] {
    full_pending_ = false;
    if (seeds_.empty()) return;
    reallocate();
    schedule_next();
  });
}

}  // namespace moehub
