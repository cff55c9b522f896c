#pragma once
// Shared by the synthetic-routing unit and model-level tests.

#include <cstdint>

namespace moehub::test {

struct Shape {
  const char* model;
  int64_t experts;
  int64_t top_k;
};

// Mixtral (8 experts, top-2), Phi-3.5-MoE (16, top-2), Qwen2-MoE as in the paper (64, top-4).
constexpr Shape kShapes[] = {{"mixtral", 8, 2}, {"phi", 16, 2}, {"qwen", 64, 4}};
}  // namespace moehub::test
