#pragma once
// A sweep file (configs/sweeps/<name>.toml): a [sweep] over any parameters and the [[plot]]s to
// draw from its rows. Every figure file is also a sweep file (its [sweep] gives the rows; the
// figure's own builder draws the paper's figure from them). Format: docs/figures.md.

#include <filesystem>
#include <string>
#include <vector>

#include "figures/sweep_spec.h"

namespace moehub {

// One plot of a sweep: `y` (a result field) against the axis `x`, one line or bar series per
// value of `series`, one panel per value of `panels`. Every other axis must have one value in
// the plot (seeds excepted: their mean is drawn, with min-max bars).
struct SweepPlot {
  std::string name;           // file stem: <sweep>-<name>
  std::string kind = "line";  // line or bar
  std::string title;
  std::string quick_title;    // drawn with --quick when set (the subset may run other points)
  std::string x;
  std::string y;
  std::string series = "system";
  std::string panels;         // empty: one panel
  std::string speedup_over;   // a system: draw field(that system) / field(series system)
  std::vector<std::string> systems;  // the systems drawn (default: the sweep's, less speedup_over)
  std::string xlabel, ylabel;        // default: the axis name, the field and its unit
  bool logx = false, logy = false;
  std::string origin;                // "file:line"
};

struct SweepFile {
  std::string name;  // file stem
  std::filesystem::path file;
  std::string description;
  SweepAxes sweep;
  SweepAxes quick;  // sweep with the [sweep.quick] overrides applied
  std::vector<SweepPlot> plots;

  const SweepAxes& axes(bool quick_subset) const { return quick_subset ? quick : sweep; }
  std::vector<SweepPoint> points(bool quick_subset) const;
};

// Reads a sweep file or a figure file; UserError naming file:line and key for anything wrong.
SweepFile load_sweep_file(const std::filesystem::path& file);
// True if the TOML file has a [sweep] table and no [figure] table.
bool is_sweep_file(const std::filesystem::path& file);
// Every system the sweep names (full and quick) is registered: UserError "<file>: sweep.systems"
// naming the unknown one and the known ones.
void require_registered_systems(const SweepFile& sweep);

}  // namespace moehub
