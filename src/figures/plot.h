#pragma once
// A figure as data for gnuplot: panels of clustered bars or lines, written as one
// self-contained script (data inline) that renders the same figure to SVG and PNG.

#include <filesystem>
#include <string>
#include <vector>

namespace moehub {

struct PlotSeries {
  std::string title;
  std::vector<double> y;  // NaN where there is no value
  bool dashed = false;    // reference lines (ideal scaling)
  std::vector<double> low, high;  // error bars (e.g. min and max over seeds); empty or NaN: none
};

struct PlotPanel {
  std::string title, xlabel, ylabel;
  bool bars = false;  // clustered bars over `categories`; otherwise lines over `x`
  bool stacked = false;  // with bars: the series stacked in one bar per category
  bool logx = false, logy = false;
  std::vector<std::string> categories;
  std::vector<double> x;
  std::vector<PlotSeries> series;
  bool has_data() const;
};

struct Plot {
  std::string title;
  std::vector<PlotPanel> panels;
  int columns = 1;
  std::string note;  // printed under the panels, e.g. which systems were not run
};

// The gnuplot script that draws `plot` to `<stem>.svg` and `<stem>.png` (relative to the
// folder gnuplot runs in). Deterministic: the same plot gives the same bytes.
std::string gnuplot_script(const Plot& plot, const std::string& stem);

// Writes DIR/gnuplot/<stem>.gp and runs gnuplot in DIR; its messages go to DIR/gnuplot/<stem>.log.
// UserError if gnuplot is missing or fails.
void render_plot(const Plot& plot, const std::filesystem::path& dir, const std::string& stem);

}  // namespace moehub
