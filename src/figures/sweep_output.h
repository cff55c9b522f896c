#pragma once
// What `moehub sweep` writes from a sweep's runs: one tidy CSV row per (point, system) with every
// result field, a table of mean, min and max over seeds when the sweep repeats points over seeds,
// and the plots the file asks for.

#include <string>
#include <utility>
#include <vector>

#include "figures/figure_data.h"
#include "figures/plot.h"
#include "figures/sweep_file.h"

namespace moehub {

struct SweepOutput {
  std::vector<std::pair<std::string, CsvTable>> csvs;  // file name and data
  std::vector<std::pair<std::string, Plot>> plots;     // file stem and plot
};

// Fills moehub_speedup and fraction_of_ideal of every run from MoE-Hub's and the ideal layer's
// runs at the same point, where the sweep has them.
void add_point_comparisons(FigureRuns& runs);

// `runs` holds the sweep's points (as SweepFile::points gives them) and systems.
SweepOutput build_sweep_output(const SweepFile& file, bool quick, const FigureRuns& runs);

}  // namespace moehub
