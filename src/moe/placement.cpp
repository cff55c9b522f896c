#include "moe/placement.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

TokenPartition::TokenPartition(int64_t tokens, int64_t gpus) : tokens_(tokens), gpus_(gpus) {
  if (gpus < 1) throw std::logic_error("TokenPartition: no GPUs");
  if (tokens < gpus) {
    throw UserError("run.tokens", fmt::format("{} tokens cannot be partitioned over {} GPUs (run.gpus): every GPU "
                                              "needs at least one token",
                                              tokens, gpus));
  }
  quotient_ = tokens / gpus;
  remainder_ = tokens % gpus;
}

int64_t TokenPartition::begin(int64_t gpu) const {
  if (gpu < 0 || gpu > gpus_) throw std::logic_error("TokenPartition: GPU out of range");
  return gpu * quotient_ + std::min(gpu, remainder_);
}

int64_t TokenPartition::end(int64_t gpu) const { return begin(gpu + 1); }

int64_t TokenPartition::gpu_of_token(int64_t token) const {
  if (token < 0 || token >= tokens_) throw std::logic_error("TokenPartition: token out of range");
  const int64_t long_span = remainder_ * (quotient_ + 1);
  if (token < long_span) return token / (quotient_ + 1);
  return remainder_ + (token - long_span) / quotient_;
}

std::vector<int64_t> TokenPartition::counts() const {
  std::vector<int64_t> out;
  for (int64_t g = 0; g < gpus_; ++g) out.push_back(count(g));
  return out;
}

// GPU ids are int wherever data is held per GPU (sim/per_gpu.h); the workload counts them in int64_t.
ExpertPlacement::ExpertPlacement(std::vector<int32_t> gpu_of, int64_t gpus)
    : gpu_of_(std::move(gpu_of)), local_(static_cast<int>(gpus)), local_index_(gpu_of_.size()) {
  for (size_t e = 0; e < gpu_of_.size(); ++e) {
    auto& list = local_[gpu_of_[e]];
    local_index_[e] = static_cast<int32_t>(list.size());
    list.push_back(static_cast<int32_t>(e));
  }
}

ExpertPlacement ExpertPlacement::contiguous(int64_t experts, int64_t gpus) {
  if (experts < 1 || gpus < 1) throw std::logic_error("ExpertPlacement: empty shape");
  if (experts % gpus != 0) {
    // The smallest count of replicas that gives every GPU the same number of physical experts.
    const int64_t redundant = (gpus - experts % gpus) % gpus;
    throw UserError("model.experts",
                    fmt::format("{} experts do not divide over {} GPUs (run.gpus); give workload.expert_map to place "
                                "them explicitly, or workload.redundant_experts={} for {} physical experts ({} per GPU, "
                                "replicas placed by EPLB)",
                                experts, gpus, redundant, experts + redundant, (experts + redundant) / gpus));
  }
  const int64_t per_gpu = experts / gpus;
  std::vector<int32_t> map(static_cast<size_t>(experts));
  for (int64_t e = 0; e < experts; ++e) map[static_cast<size_t>(e)] = static_cast<int32_t>(e / per_gpu);
  return ExpertPlacement(std::move(map), gpus);
}

ExpertPlacement ExpertPlacement::from_map(const std::vector<int64_t>& map, int64_t experts, int64_t gpus) {
  if (static_cast<int64_t>(map.size()) != experts) {
    throw UserError("workload.expert_map", fmt::format("has {} entries; it needs one GPU per expert "
                                                       "(model.experts = {})",
                                                       map.size(), experts));
  }
  std::vector<int32_t> gpu_of(map.size());
  for (size_t e = 0; e < map.size(); ++e) {
    if (map[e] < 0 || map[e] >= gpus) {
      throw UserError("workload.expert_map", fmt::format("entry {} (expert {}) is GPU {}, outside 0..{} (run.gpus = {})",
                                                         e, e, map[e], gpus - 1, gpus));
    }
    gpu_of[e] = static_cast<int32_t>(map[e]);
  }
  return ExpertPlacement(std::move(gpu_of), gpus);
}

ExpertPlacement ExpertPlacement::from_map_or_contiguous(const std::vector<int64_t>& map, int64_t experts,
                                                        int64_t gpus) {
  return map.empty() ? contiguous(experts, gpus) : from_map(map, experts, gpus);
}

DispatchPlan::DispatchPlan(const Routing& routing, const TokenPartition& tokens, const ExpertPlacement& experts)
    : gpus_(static_cast<int>(tokens.gpus())), experts_(routing.experts()) {
  if (routing.tokens() != tokens.tokens() || experts.experts() != routing.experts() || experts.gpus() != gpus_) {
    throw std::logic_error("DispatchPlan: routing, token partition and placement disagree on the shape");
  }
  rows_ = PerPair<int64_t>(gpus_, 0);
  to_expert_.assign(static_cast<size_t>(gpus_ * experts_), 0);
  expert_rows_.resize(static_cast<size_t>(experts_));
  const std::vector<int64_t> load = routing.tokens_per_expert();
  for (int64_t e = 0; e < experts_; ++e) expert_rows_[static_cast<size_t>(e)].reserve(static_cast<size_t>(load[static_cast<size_t>(e)]));
  for (int g = 0; g < gpus_; ++g) {
    for (int64_t t = tokens.begin(g); t < tokens.end(g); ++t) {
      for (int64_t j = 0; j < routing.top_k(); ++j) {
        const int32_t e = routing.expert(t, j);
        if (e < 0) throw std::logic_error("DispatchPlan: routing has an unset slot");
        ++rows_(g, experts.gpu_of_expert(e));
        ++to_expert_[static_cast<size_t>(g * experts_ + e)];
        expert_rows_[static_cast<size_t>(e)].push_back(RowRef{t, static_cast<int32_t>(j)});
      }
    }
  }
}

int64_t DispatchPlan::rows_into(int dst) const {
  int64_t sum = 0;
  for (int s = 0; s < gpus_; ++s) sum += rows(s, dst);
  return sum;
}

int64_t DispatchPlan::rows_from(int src) const {
  int64_t sum = 0;
  for (int d = 0; d < gpus_; ++d) sum += rows(src, d);
  return sum;
}

int64_t DispatchPlan::remote_rows() const {
  int64_t sum = 0;
  for (int s = 0; s < gpus_; ++s) {
    for (int d = 0; d < gpus_; ++d) {
      if (s != d) sum += rows(s, d);
    }
  }
  return sum;
}

double DispatchPlan::remote_fraction() const {
  int64_t all = 0;
  for (int64_t x : rows_) all += x;
  return all == 0 ? 0.0 : static_cast<double>(remote_rows()) / static_cast<double>(all);
}

}  // namespace moehub
