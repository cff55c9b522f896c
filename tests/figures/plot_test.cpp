#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "figures/plot.h"

namespace moehub {
namespace {

PlotSeries series(const std::string& title, std::vector<double> y) {
  PlotSeries s;
  s.title = title;
  s.y = std::move(y);
  return s;
}

// The script's line that starts with `prefix` (the first one), or "" if none does.
std::string line_starting(const std::string& script, const std::string& prefix) {
  const size_t at = script.find("\n" + prefix);
  if (at == std::string::npos) return "";
  const size_t end = script.find('\n', at + 1);
  return script.substr(at + 1, end - at - 1);
}

bool contains(const std::string& script, const std::string& text) { return script.find(text) != std::string::npos; }

TEST(GnuplotScript, LinesDrawErrorBarsWithYerrorlines) {
  PlotPanel p;
  p.x = {1, 2, 4};
  PlotSeries a = series("mean of seeds", {10, 20, NAN});
  a.low = {9, NAN, NAN};
  a.high = {12, NAN, NAN};
  p.series = {a, series("one seed", {5, 6, 7})};
  Plot plot;
  plot.panels = {p};
  const std::string gp = gnuplot_script(plot, "f");
  // y, low and high of the series with error bars, then the other series' y; a missing bound is
  // the value itself (gnuplot would read NaN as 0).
  EXPECT_TRUE(contains(gp, "$panel0 << EOD\n1 10 9 12 5\n2 20 20 20 6\n4 NaN NaN NaN 7\nEOD\n"));
  EXPECT_EQ(line_starting(gp, "plot $panel0"),
            "plot $panel0 using 1:2:3:4 with yerrorlines title \"mean of seeds\" noenhanced lc rgb '#14205a' pt 7 ps 1.3 "
            "lw 2.5 dt 1, \\");
  EXPECT_TRUE(contains(gp, "\n     $panel0 using 1:5 with linespoints title \"one seed\" noenhanced lc rgb '#f39c12' pt 5 "
                           "ps 1.3 lw 2.5 dt 1\n"));
}

TEST(GnuplotScript, ClusteredBarsDrawErrorBarsWithTheHistogramErrorbarsStyle) {
  PlotPanel p;
  p.bars = true;
  p.categories = {"a", "b"};
  PlotSeries a = series("A", {10, 20});
  a.low = {8, NAN};
  a.high = {11, NAN};
  p.series = {a, series("B", {3, NAN})};
  Plot plot;
  plot.panels = {p};
  const std::string gp = gnuplot_script(plot, "f");
  // A bar's missing bound is its own value: gnuplot would draw a NaN bound from zero.
  EXPECT_TRUE(contains(gp, "$panel0 << EOD\n\"a\" 10 8 11 3\n\"b\" 20 20 20 NaN\nEOD\n"));
  EXPECT_TRUE(contains(gp, "\nset style histogram errorbars gap 1 lw 1.5\n"));
  EXPECT_EQ(line_starting(gp, "plot $panel0"), "plot $panel0 using 2:3:4:xtic(1) title \"A\" noenhanced lc rgb '#14205a', \\");
  // A series without error bars gives its value as both bounds (the style wants three columns).
  EXPECT_TRUE(contains(gp, "\n     $panel0 using 5:5:5 title \"B\" noenhanced lc rgb '#f39c12'\n"));
}

TEST(GnuplotScript, NoErrorBarsWithoutBoundsOrOnStackedBars) {
  PlotPanel p;
  p.bars = true;
  p.categories = {"a"};
  PlotSeries a = series("A", {10});
  a.low = {NAN};
  a.high = {NAN};
  p.series = {a};
  Plot plot;
  plot.panels = {p};
  std::string gp = gnuplot_script(plot, "f");
  EXPECT_TRUE(contains(gp, "\nset style histogram clustered gap 1\n"));
  EXPECT_TRUE(contains(gp, "$panel0 << EOD\n\"a\" 10\nEOD\n"));

  plot.panels[0].series[0].low = {9};
  plot.panels[0].stacked = true;
  gp = gnuplot_script(plot, "f");
  EXPECT_TRUE(contains(gp, "\nset style histogram rowstacked\n"));
  EXPECT_TRUE(contains(gp, "$panel0 << EOD\n\"a\" 10\nEOD\n"));
  EXPECT_FALSE(contains(gp, "errorbars"));
}

TEST(GnuplotScript, LabelsSitAboveTheirBarsAndFreeTextWhereItIsPut) {
  PlotPanel p;
  p.bars = true;
  p.categories = {"4096", "8192"};
  PlotSeries base = series("comet", {12, 24});
  PlotSeries hub = series("moehub", {6, 8});
  hub.labels = {"2.00x", ""};
  hub.high = {7, NAN};
  p.series = {base, hub};
  p.labels = {PlotText{1, 30, "paper: 3.1x"}};
  Plot plot;
  plot.panels = {p};
  const std::string gp = gnuplot_script(plot, "f");
  // Two bars per cluster and a gap of one: the second bar's middle is 1/6 right of the category.
  // The label sits on the error bar's top (7), not the bar's (6); "" gives no label.
  EXPECT_EQ(line_starting(gp, "set label 1 "),
            "set label 1 \"2.00x\" at 0.166667,7 center offset 0,0.8 font ',13' noenhanced front");
  EXPECT_EQ(line_starting(gp, "set label 2 "), "set label 2 \"paper: 3.1x\" at 1,30 center font ',13' noenhanced front");
  EXPECT_FALSE(contains(gp, "set label 3 "));
  EXPECT_TRUE(contains(gp, "\nset offsets 0, 0, graph 0.1, 0\n"));  // room above the tallest label
}

TEST(GnuplotScript, LabelsWiderThanTheirBarsStandUpright) {
  PlotPanel p;
  p.bars = true;
  p.categories = {"2", "4", "8", "16"};
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"}) p.series.push_back(series(name, {10, 8, 6, 4}));
  p.series[6].labels = {"1.05x", "", "", ""};
  Plot plot;
  plot.panels = {p};
  const std::string gp = gnuplot_script(plot, "f");
  // 4 clusters of 8 bars in a 1200 px panel leave a bar 30 px, narrower than "1.05x".
  EXPECT_EQ(line_starting(gp, "set label 1 "),
            "set label 1 \"1.05x\" at 0.277778,10 left rotate by 90 offset 0,0.5 font ',13' noenhanced front");
  EXPECT_TRUE(contains(gp, "\nset offsets 0, 0, graph 0.15, 0\n"));
}

TEST(GnuplotScript, LineLabelsRunInARowPerSeriesAboveThePoints) {
  PlotPanel p;
  p.x = {128, 1024};
  PlotSeries hub = series("moehub", {2.6, 1.5});
  hub.labels = {"2.60x", "1.50x"};
  PlotSeries comet = series("comet", {2.0, 1.45});
  comet.labels = {"", "1.45x"};
  p.series = {comet, hub, series("ideal", {2.7, 2.5})};
  Plot plot;
  plot.panels = {p};
  const std::string gp = gnuplot_script(plot, "f");
  // At the points' x, near the top of the panel, one row per labelled series in its colour: beside
  // the points they would run into the lines just above and below.
  EXPECT_EQ(line_starting(gp, "set label 1 "),
            "set label 1 \"1.45x\" at first 1024, graph 0.95 center textcolor rgb '#14205a' font ',13' noenhanced front");
  EXPECT_EQ(line_starting(gp, "set label 2 "),
            "set label 2 \"2.60x\" at first 128, graph 0.885 center textcolor rgb '#f39c12' font ',13' noenhanced front");
  EXPECT_EQ(line_starting(gp, "set label 3 "),
            "set label 3 \"1.50x\" at first 1024, graph 0.885 center textcolor rgb '#f39c12' font ',13' noenhanced front");
  EXPECT_TRUE(contains(gp, "\nset offsets graph 0.05, graph 0.05, graph 0.22, graph 0.05\n"));  // two rows of room
}

TEST(GnuplotScript, OneKeyForPanelsThatShareTheirSeriesAndBothImages) {
  PlotPanel a;
  a.x = {1, 2};
  a.series = {series("x", {1, 2}), series("y", {2, 3})};
  PlotPanel b = a;
  Plot plot;
  plot.title = "T";
  plot.columns = 2;
  plot.panels = {a, b};
  const std::string gp = gnuplot_script(plot, "f");
  EXPECT_TRUE(contains(gp, "\nset terminal svg size 1200,"));
  EXPECT_TRUE(contains(gp, "\nset output \"f.svg\"\n"));
  EXPECT_TRUE(contains(gp, "\nset output \"f.png\"\n"));
  EXPECT_TRUE(contains(gp, "\nset key center center horizontal reverse Left maxcols 2 font ',14' samplen 2.5\n"));
  EXPECT_TRUE(contains(gp, "NaN with linespoints title \"y\" noenhanced lc rgb '#f39c12'"));
  EXPECT_EQ(line_starting(gp, "unset key"), "unset key");  // the panels draw none of their own
  EXPECT_EQ(gp, gnuplot_script(plot, "f"));                  // deterministic

  plot.panels[1].series[1].title = "z";  // different series: each panel keeps its own key
  EXPECT_FALSE(contains(gnuplot_script(plot, "f"), "maxcols"));
  EXPECT_TRUE(contains(gnuplot_script(plot, "f"), "\nset key above horizontal reverse Left font ',14'\n"));
}

}  // namespace
}  // namespace moehub
