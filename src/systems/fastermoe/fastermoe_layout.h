#pragma once
// Where FasterMoE's buffers hold the rows of each (local expert, source rank) (computePtrs):
// shared by the timing program (fastermoe.cpp) and its functional companion
// (fastermoe_functional.cpp).

#include <cstdint>

#include "moe/workload.h"

namespace moehub {

class FasterMoeLayout {
 public:
  explicit FasterMoeLayout(const Workload& w) : w_(w), n_(static_cast<int>(w.tokens().gpus())) {}

  int local(int g) const { return static_cast<int>(w_.placement().local_experts(g).size()); }
  int64_t expert_of(int g, int ei) const { return w_.placement().local_experts(g)[static_cast<size_t>(ei)]; }
  // Rows from src's tokens to dst's ei-th local expert.
  int64_t rows(int src, int dst, int ei) const { return w_.plan().rows_to_expert(src, expert_of(dst, ei)); }
  // Offset of (local expert ei, source src) in GPU g's global_input_buf: expert-major, then
  // source rank (computePtrs' global_ptr).
  int64_t global_ptr(int g, int ei, int src) const {
    int64_t off = 0;
    for (int e = 0; e < ei; ++e) {
      for (int s = 0; s < n_; ++s) off += rows(s, g, e);
    }
    for (int s = 0; s < src; ++s) off += rows(s, g, ei);
    return off;
  }
  int64_t rows_in(int g) const { return global_ptr(g, local(g), 0); }

 private:
  const Workload& w_;
  int n_;
};

}  // namespace moehub
