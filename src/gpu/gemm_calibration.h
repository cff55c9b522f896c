#pragma once
// Measured GEMM timings (configs/calibration/h200.toml, written by scripts/calibrate-gpu.sh on
// a real GPU) that the tile model can use in place of gpu.gemm_efficiency: a problem takes the
// sustained tensor efficiency that reproduces the measured time of its nearest measured shape
// under the same tile model (same tiles, same waves). Padding and wave quantisation of the
// problem itself still come from its own tile count.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/time.h"

namespace moehub::gpu {

// One timed shape: `groups` GEMMs of m x n x k each (groups = 1: a plain GEMM).
struct GemmMeasurement {
  uint64_t groups = 1;
  uint64_t m = 0;
  uint64_t n = 0;
  uint64_t k = 0;
  Time time;
  int line = 0;  // where it is in the file, for messages
};

class GemmCalibration {
 public:
  // Reads the [[gemm]] and [[grouped_gemm]] tables. Throws UserError("file:line", reason) for
  // a malformed file or entry, or for a file with no measurement at all.
  static GemmCalibration load(const std::filesystem::path& file);
  explicit GemmCalibration(std::vector<GemmMeasurement> points, std::string source = "calibration");

  // The measurement closest to the shape in log space over (m, n, k, groups); shapes of the
  // same kind (plain or grouped) are preferred when the file has both.
  const GemmMeasurement& nearest(uint64_t groups, uint64_t m, uint64_t n, uint64_t k) const;
  const std::vector<GemmMeasurement>& points() const { return points_; }
  const std::string& source() const { return source_; }

 private:
  std::vector<GemmMeasurement> points_;
  std::string source_;
};

}  // namespace moehub::gpu
