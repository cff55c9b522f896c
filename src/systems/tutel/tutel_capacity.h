#pragma once
// Tutel's static expert buffers (microsoft/tutel tutel/impls/fast_dispatch.py extract_critical;
// docs/research/systems.md 3.1-3.2): every (expert, source GPU) pair gets `capacity` slots; a
// routed row's slot ("location") is its rank among the rows of its source GPU for that expert,
// counting slot 0 of every token first, then slot 1, ...; rows at location >= capacity are
// dropped (they contribute zero to the token's output).

#include <cstdint>
#include <vector>

#include "moe/workload.h"

namespace moehub {

// capacity_factor > 0: k * int(cf * ceil(T / E)), static, no host sync.
// capacity_factor <= 0: the largest (source GPU, expert) row count over all GPUs (an
// all-reduce MAX in Tutel); if < 0, capped at k * int(-cf * ceil(T / E)).
// Then rounded up to a multiple of `alignment` (Tutel: sharded_count x overlap degree) so the
// capacity dimension splits evenly. T is the largest per-GPU token count (Tutel's
// inequivalent_tokens all-reduce; equal partitions give the local count).
// A capacity above kMaxTutelCapacity (capacity_factor > 0) is a UserError naming the factor.
constexpr int64_t kMaxTutelCapacity = INT32_MAX;
int64_t tutel_capacity(double capacity_factor, int64_t tokens_per_gpu, int64_t experts, int64_t top_k,
                       int64_t max_rows_per_source_expert, int64_t alignment);

// Slot assignment of every routed row of a workload under one capacity.
class TutelSlots {
 public:
  TutelSlots(const Workload& workload, int64_t capacity);
  // Over `routing`'s experts (Tutel's gate: the logical experts under parallel_type 'model').
  TutelSlots(const Routing& routing, const TokenPartition& tokens, int64_t capacity);

  int64_t capacity() const { return capacity_; }
  // Location of (token, slot) in its expert's buffer on its source GPU; >= capacity: dropped.
  int64_t location(int64_t token, int64_t slot) const { return location_.at(static_cast<size_t>(token * top_k_ + slot)); }
  bool dropped(int64_t token, int64_t slot) const { return location(token, slot) >= capacity_; }
  // Rows kept from source GPU `src` for expert e (at most capacity).
  int64_t kept(int64_t src, int64_t expert) const { return kept_.at(static_cast<size_t>(src * experts_ + expert)); }
  int64_t dropped_rows() const { return dropped_rows_; }
  // Tokens with at least one dropped slot.
  int64_t dropped_tokens() const { return dropped_tokens_; }
  // Largest (source GPU, expert) row count before dropping.
  int64_t max_rows_per_source_expert() const { return max_rows_; }

 private:
  int64_t capacity_;
  int64_t top_k_;
  int64_t experts_;
  std::vector<int64_t> location_;
  std::vector<int64_t> kept_;
  int64_t dropped_rows_ = 0;
  int64_t dropped_tokens_ = 0;
  int64_t max_rows_ = 0;
};

// Rows per (source GPU, expert) before any dropping: what capacity_factor <= 0 reduces over.
int64_t max_rows_per_source_expert(const Workload& workload);

}  // namespace moehub
