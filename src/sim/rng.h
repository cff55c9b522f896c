#pragma once
// Deterministic random numbers: xoshiro256** seeded by splitmix64. The standard library's
// distributions are implementation-defined, so every distribution used here is written out.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moehub {

class Rng {
 public:
  // `stream` separates independent sequences drawn from one user seed.
  explicit Rng(uint64_t seed, uint64_t stream = 0);

  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform integer in [0, bound), unbiased; bound > 0.
  uint64_t below(uint64_t bound);
  // Standard normal (Box-Muller; pairs are not cached so the sequence is simple to reason about).
  double normal();
  double exponential(double mean);

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(below(i));
      std::swap(v[i - 1], v[j]);
    }
  }

 private:
  uint64_t s_[4];
};

}  // namespace moehub
