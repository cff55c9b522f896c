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
  // Error bars (e.g. min and max over seeds), in y's units: empty, or as long as y with NaN
  // where a value has none. Lines draw them with yerrorlines, clustered bars with the
  // histogram errorbars style; stacked bars leave them out.
  std::vector<double> low, high;
  // Text just above each value (a bar's top, a line's point), e.g. "2.41x": empty, or as long
  // as y with "" where a value has none.
  std::vector<std::string> labels;
  bool has_errors() const;
};

// Free text in a panel, in its data coordinates (clustered bars: category i is at x = i).
struct PlotText {
  double x = 0, y = 0;
  std::string text;
};

struct PlotPanel {
  std::string title, xlabel, ylabel;
  bool bars = false;  // clustered bars over `categories`; otherwise lines over `x`
  bool stacked = false;  // with bars: the series stacked in one bar per category
  bool logx = false, logy = false;
  std::vector<std::string> categories;
  std::vector<double> x;
  std::vector<PlotSeries> series;
  std::vector<PlotText> labels;
  bool has_data() const;
};

struct Plot {
  std::string title;
  std::vector<PlotPanel> panels;
  int columns = 1;
  std::string note;  // printed under the title, e.g. which systems were not run
};

// The gnuplot script that draws `plot` to `<stem>.svg` and `<stem>.png` (relative to the
// folder gnuplot runs in). Deterministic: the same plot gives the same bytes.
std::string gnuplot_script(const Plot& plot, const std::string& stem);

// Writes DIR/gnuplot/<stem>.gp and runs gnuplot in DIR; its messages go to DIR/gnuplot/<stem>.log.
// UserError if gnuplot is missing or fails.
void render_plot(const Plot& plot, const std::filesystem::path& dir, const std::string& stem);

}  // namespace moehub
