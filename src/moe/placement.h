#pragma once
// Where tokens and experts live for expert parallelism over N GPUs, and the traffic that
// follows from a routing: tokens by sequence partition, experts contiguous by default or by an
// explicit map, per (source GPU, destination GPU) and per (source GPU, expert) row counts, and
// every expert's rows in an order that does not depend on arrival (by token, then slot).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "moe/routing.h"
#include "sim/per_gpu.h"

namespace moehub {

// Token t lives on GPU t / (M / N) when N divides M. Otherwise the first M % N GPUs hold one
// token more: GPU g holds [g*q + min(g, r), ...) with q = M / N, r = M % N.
class TokenPartition {
 public:
  // Throws UserError naming run.tokens when tokens < gpus.
  TokenPartition(int64_t tokens, int64_t gpus);

  int64_t tokens() const { return tokens_; }
  int64_t gpus() const { return gpus_; }
  int64_t begin(int64_t gpu) const;  // first token of the GPU
  int64_t end(int64_t gpu) const;    // one past its last token
  int64_t count(int64_t gpu) const { return end(gpu) - begin(gpu); }
  int64_t max_count() const { return count(0); }
  int64_t gpu_of_token(int64_t token) const;
  std::vector<int64_t> counts() const;

 private:
  int64_t tokens_, gpus_, quotient_, remainder_;
};

class ExpertPlacement {
 public:
  // E / N consecutive experts per GPU; throws UserError naming model.experts if N does not divide E.
  static ExpertPlacement contiguous(int64_t experts, int64_t gpus);
  // map[e] = GPU of expert e (a GPU may hold any number of experts, also none); throws
  // UserError naming workload.expert_map on a wrong length or an out-of-range GPU.
  static ExpertPlacement from_map(const std::vector<int64_t>& map, int64_t experts, int64_t gpus);
  // The map when given (non-empty), else contiguous.
  static ExpertPlacement from_map_or_contiguous(const std::vector<int64_t>& map, int64_t experts, int64_t gpus);

  int64_t experts() const { return static_cast<int64_t>(gpu_of_.size()); }
  int64_t gpus() const { return local_.size(); }
  int32_t gpu_of_expert(int64_t expert) const { return gpu_of_.at(static_cast<size_t>(expert)); }
  // Experts on a GPU, ascending; an expert's local index is its position here.
  const std::vector<int32_t>& local_experts(int gpu) const { return local_.at(gpu); }
  int32_t local_index(int64_t expert) const { return local_index_.at(static_cast<size_t>(expert)); }
  const std::vector<int32_t>& map() const { return gpu_of_; }

 private:
  ExpertPlacement(std::vector<int32_t> gpu_of, int64_t gpus);

  std::vector<int32_t> gpu_of_;
  PerGpu<std::vector<int32_t>> local_;
  std::vector<int32_t> local_index_;
};

// One routed row: token `token`'s copy for its slot-th expert.
struct RowRef {
  int64_t token = 0;
  int32_t slot = 0;
  bool operator==(const RowRef&) const = default;
};

// The dispatch traffic of one routing under one placement (combine is the reverse).
class DispatchPlan {
 public:
  DispatchPlan(const Routing& routing, const TokenPartition& tokens, const ExpertPlacement& experts);

  int gpus() const { return gpus_; }
  int64_t experts() const { return experts_; }
  // Rows from GPU src (its tokens) to GPU dst (its experts); src == dst are local rows.
  int64_t rows(int src, int dst) const { return rows_(src, dst); }
  // Rows from GPU src to expert e: the split sizes of an all-to-all.
  int64_t rows_to_expert(int64_t src, int64_t expert) const {
    return to_expert_.at(static_cast<size_t>(src * experts_ + expert));
  }
  int64_t rows_into(int dst) const;  // all rows GPU dst's experts receive
  int64_t rows_from(int src) const;  // all rows GPU src's tokens send
  int64_t remote_rows() const;           // rows with src != dst
  double remote_fraction() const;        // remote_rows / all rows (0 when there are none)
  // Every row of expert e, ordered by token then slot (independent of arrival order).
  const std::vector<RowRef>& expert_rows(int64_t expert) const { return expert_rows_.at(static_cast<size_t>(expert)); }

 private:
  int gpus_;
  int64_t experts_;
  PerPair<int64_t> rows_;
  std::vector<int64_t> to_expert_;
  std::vector<std::vector<RowRef>> expert_rows_;
};

}  // namespace moehub
