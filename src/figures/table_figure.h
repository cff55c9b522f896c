#pragma once
// The headline table (our averages beside the paper's), the Table-I-style code count, and
// the hardware-overhead table. Declared here for the tests and RESULTS.md.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "figures/figure_data.h"

namespace moehub {

struct HeadlineValue {
  const Headline* headline = nullptr;
  std::optional<double> ours;  // nothing when none of the pairs ran
  size_t samples = 0;          // ratios averaged
  std::optional<double> difference() const;  // (ours - paper) / paper
  bool beyond(double tolerance) const;       // |difference| > tolerance
};

std::vector<HeadlineValue> compute_headlines(const FigureSpec& table, const FigureContext& context);

// Lines of a C++ source that hold code: blank lines and comments (// and /* */, outside
// string and character literals) do not count.
size_t count_code_lines(const std::string& source);

// Files of system `name` under `dir`: <stem>.cpp, <stem>_*.cpp, <stem>.h and <stem>_*.h,
// where <stem> is the name with '-' replaced by '_'. Sorted.
std::vector<std::filesystem::path> system_source_files(const std::filesystem::path& dir, const std::string& name);

// Differences beyond this fraction get a line in RESULTS.md (issue 9).
inline constexpr double kHeadlineTolerance = 0.15;

}  // namespace moehub
