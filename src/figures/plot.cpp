#include "figures/plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

// Gnuplot double-quoted string.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "NaN"; }

// docs/RESULTS.md shows the SVG at the page's width (about 900-1000 px on GitHub), so the
// canvas stays near that width and text is sized for it; denser figures get more rows, not
// more columns.
constexpr int kWidth = 1200;
constexpr int kPanelHeight = 430;
constexpr int kTitleLine = 30;  // px per line of the figure's title and note
constexpr int kKeyLine = 26;    // px per row of the shared key
constexpr int kFont = 15;       // axis labels; titles, ticks, key and value labels relative to it
constexpr int kTickFont = 14, kKeyFont = 14, kLabelFont = 13, kPanelTitleFont = 16, kTitleFont = 18;
constexpr double kCharWidth = 0.55;  // of the font size: a Helvetica/DejaVu character's mean width

// Nine colours whose lightness differs (CIE L* 15 to 81, neighbours far apart) so the series
// stay apart in grayscale; lines add a point type of their own. The ninth (teal, L* 44, an open
// diamond) is for the scale figure's ninth line; the first eight draw every other figure.
constexpr std::array<const char*, 9> kColours{"#14205a", "#f39c12", "#6a3d9a", "#a6d96a", "#1f78b4",
                                              "#f06eaa", "#8b0a1a", "#8c8c8c", "#00746b"};
constexpr std::array<int, 9> kPointTypes{7, 5, 9, 11, 13, 6, 4, 8, 12};

bool has_values(const PlotSeries& s) {
  for (double v : s.y) {
    if (std::isfinite(v)) return true;
  }
  return false;
}

// Series without a single value are left out: gnuplot rejects an empty histogram column.
std::vector<size_t> shown_series(const PlotPanel& p) {
  std::vector<size_t> shown;
  for (size_t s = 0; s < p.series.size(); ++s) {
    if (has_values(p.series[s])) shown.push_back(s);
  }
  return shown;
}

double at(const std::vector<double>& v, size_t i) { return i < v.size() ? v[i] : NAN; }

bool errors_drawn(const PlotPanel& p, const PlotSeries& s) { return s.has_errors() && !(p.bars && p.stacked); }

// Column of each series' y in the panel's datablock; low and high follow y where drawn.
std::vector<int> y_columns(const PlotPanel& p) {
  std::vector<int> cols;
  int next = 2;
  for (const auto& s : p.series) {
    cols.push_back(next);
    next += errors_drawn(p, s) ? 3 : 1;
  }
  return cols;
}

void write_datablock(std::ostream& gp, const PlotPanel& p, size_t index) {
  gp << fmt::format("$panel{} << EOD\n", index);
  const size_t rows = p.bars ? p.categories.size() : p.x.size();
  for (size_t r = 0; r < rows; ++r) {
    gp << (p.bars ? quoted(p.categories[r]) : number(p.x[r]));
    for (const auto& s : p.series) {
      const double y = at(s.y, r);
      gp << " " << number(y);
      if (!errors_drawn(p, s)) continue;
      // A missing bound is the value itself (no error bar to see): gnuplot reads a NaN bound as 0.
      const double lo = at(s.low, r), hi = at(s.high, r);
      gp << " " << number(std::isfinite(lo) ? lo : y) << " " << number(std::isfinite(hi) ? hi : y);
    }
    gp << "\n";
  }
  gp << "EOD\n";
}

// How a series looks: the same in its panel and in the shared key.
std::string series_style(const PlotPanel& p, size_t s) {
  if (p.bars) return fmt::format("lc rgb '{}'", kColours[s % kColours.size()]);
  if (p.series[s].dashed) return "lc rgb '#444444' lw 2 dt 2";
  return fmt::format("lc rgb '{}' pt {} ps 1.3 lw 2.5 dt 1", kColours[s % kColours.size()],
                     kPointTypes[s % kPointTypes.size()]);
}

std::string line_with(const PlotPanel& p, size_t s) {
  if (p.series[s].dashed) return "lines";
  return errors_drawn(p, p.series[s]) ? "yerrorlines" : "linespoints";
}

int text_width(const std::string& s, int font) { return static_cast<int>(std::ceil(s.size() * kCharWidth * font)); }

// Category names that would run into each other lie at an angle: the least of 30, 45, 60 and 90
// degrees that keeps neighbours a line height apart (0 when they fit side by side).
int tic_angle(const PlotPanel& p, int panel_width) {
  size_t longest = 0;
  for (const auto& c : p.categories) longest = std::max(longest, c.size());
  const double per_category = (panel_width - 120.0) / static_cast<double>(std::max<size_t>(1, p.categories.size()));
  if (text_width(std::string(longest, 'x'), kTickFont) < 0.9 * per_category) return 0;
  for (int angle : {30, 45, 60}) {
    if (per_category * std::sin(angle * M_PI / 180) > 1.4 * kTickFont) return angle;
  }
  return 90;
}

// Where the value of shown series `k` at `row` sits: the middle of its bar (gnuplot's
// clustered histogram: n bars and a gap of one bar per unit of x) or its point.
double value_x(const PlotPanel& p, size_t row, size_t k, size_t n_shown) {
  if (!p.bars) return at(p.x, row);
  if (p.stacked) return static_cast<double>(row);
  return static_cast<double>(row) + (static_cast<double>(k) - (n_shown - 1) / 2.0) / (n_shown + 1.0);
}

// The top of a value: its bar, its error bar, or the stack it ends.
double value_top(const PlotPanel& p, const std::vector<size_t>& shown, size_t row, size_t k) {
  const PlotSeries& s = p.series[shown[k]];
  if (p.bars && p.stacked) {
    double sum = 0;
    for (size_t j = 0; j <= k; ++j) {
      const double v = at(p.series[shown[j]].y, row);
      if (std::isfinite(v)) sum += v;
    }
    return sum;
  }
  const double y = at(s.y, row), hi = errors_drawn(p, s) ? at(s.high, row) : NAN;
  return std::isfinite(hi) ? std::max(y, hi) : y;
}

// Labels wider than their bars stand upright on them, so that they do not run into the next bar.
bool labels_upright(const PlotPanel& p, size_t n_shown, int panel_width) {
  if (!p.bars) return false;
  size_t longest = 0;
  for (const auto& s : p.series) {
    for (const auto& l : s.labels) longest = std::max(longest, l.size());
  }
  const double per_category = (panel_width - 120.0) / static_cast<double>(std::max<size_t>(1, p.categories.size()));
  const double bar = p.stacked ? 0.6 * per_category : per_category / (n_shown + 1.0);
  return text_width(std::string(longest, 'x'), kLabelFont) > 0.95 * bar;
}

bool has_labels(const PlotSeries& s) {
  return std::any_of(s.labels.begin(), s.labels.end(), [](const std::string& l) { return !l.empty(); });
}

// Series with labels among those shown: a line panel gives each a row of its own.
size_t label_rows(const PlotPanel& p) {
  return static_cast<size_t>(std::count_if(p.series.begin(), p.series.end(),
                                           [](const PlotSeries& s) { return has_values(s) && has_labels(s); }));
}

// Bars: each label on its bar. Lines: each labelled series' labels in a row across the top of
// the panel, above every point (write_lines leaves the room), at their points' x and in their
// colour; beside the points they ran into the neighbouring lines (MoE-Hub's speedup runs between
// ideal's and Comet's). Then the free text.
void write_labels(std::ostream& gp, const PlotPanel& p, const std::vector<size_t>& shown, int panel_width) {
  const bool upright = labels_upright(p, shown.size(), panel_width);
  int n = 0;
  size_t line_row = 0;
  for (size_t k = 0; k < shown.size(); ++k) {
    const PlotSeries& s = p.series[shown[k]];
    if (!has_labels(s)) continue;
    for (size_t r = 0; r < s.labels.size(); ++r) {
      const double x = value_x(p, r, k, shown.size()), y = value_top(p, shown, r, k);
      if (s.labels[r].empty() || !std::isfinite(x) || !std::isfinite(y)) continue;
      const std::string where =
          !p.bars ? fmt::format("at first {}, graph {} center textcolor rgb '{}'", number(x), number(0.95 - 0.065 * line_row),
                                p.series[shown[k]].dashed ? "#444444" : kColours[shown[k] % kColours.size()])
          : upright ? fmt::format("at {},{} left rotate by 90 offset 0,0.5", number(x), number(y))
                    : fmt::format("at {},{} center offset 0,0.8", number(x), number(y));
      gp << fmt::format("set label {} {} {} font ',{}' noenhanced front\n", ++n, quoted(s.labels[r]), where, kLabelFont);
    }
    ++line_row;
  }
  for (const auto& t : p.labels) {
    gp << fmt::format("set label {} {} at {},{} center font ',{}' noenhanced front\n", ++n, quoted(t.text), number(t.x),
                      number(t.y), kLabelFont);
  }
}

void write_bars(std::ostream& gp, const PlotPanel& p, size_t index, const std::vector<size_t>& shown, int panel_width) {
  const auto cols = y_columns(p);
  const bool errors = std::any_of(shown.begin(), shown.end(), [&](size_t s) { return errors_drawn(p, p.series[s]); });
  gp << "set style data histograms\n";
  if (p.stacked) {
    gp << "set style histogram rowstacked\nset boxwidth 0.6\n";
  } else {
    gp << (errors ? "set style histogram errorbars gap 1 lw 1.5\n" : "set style histogram clustered gap 1\n")
       << "set boxwidth 0.9\n";
  }
  // Half a gap beside the outer clusters, not gnuplot's whole empty category; room above the
  // tallest bar for its label.
  gp << fmt::format("set xrange [-0.5:{}]\n", number(p.categories.size() - 0.5));
  gp << "set style fill solid 0.85 border -1\nset yrange [" << (p.stacked ? "*" : "0") << ":*]\n"
     << (label_rows(p) == 0 ? ""
         : labels_upright(p, shown.size(), panel_width) ? "set offsets 0, 0, graph 0.15, 0\n"
                                                        : "set offsets 0, 0, graph 0.1, 0\n");
  const int angle = tic_angle(p, panel_width);
  // Right-justified at the tic, an angled name reads up to its bar and stays inside the canvas.
  gp << (angle ? fmt::format("set xtics rotate by {} right noenhanced\n", angle) : "set xtics norotate noenhanced\n");
  gp << "plot ";
  for (size_t i = 0; i < shown.size(); ++i) {
    const size_t s = shown[i];
    const int c = cols[s];
    gp << (i ? ", \\\n     " : "") << fmt::format("$panel{} using {}", index, c);
    if (errors) gp << (errors_drawn(p, p.series[s]) ? fmt::format(":{}:{}", c + 1, c + 2) : fmt::format(":{}:{}", c, c));
    if (i == 0) gp << ":xtic(1)";
    gp << " title " << quoted(p.series[s].title) << " noenhanced " << series_style(p, s);
  }
  gp << "\n";
}

void write_lines(std::ostream& gp, const PlotPanel& p, size_t index, const std::vector<size_t>& shown) {
  const auto cols = y_columns(p);
  if (p.logx) gp << "set logscale x 2\n";
  gp << "set xtics (";
  for (size_t i = 0; i < p.x.size(); ++i) gp << (i ? ", " : "") << quoted(number(p.x[i])) << " " << number(p.x[i]);
  // Room above the top point for a row of labels per labelled series (write_labels), and beside
  // the outer points for half a label.
  const size_t rows = label_rows(p);
  gp << ")\nset offsets graph " << (rows ? "0.05, graph 0.05" : "0.03, graph 0.03") << ", graph "
     << number(rows ? 0.08 + 0.07 * rows : 0.05) << ", graph 0.05\n";
  gp << "plot ";
  for (size_t i = 0; i < shown.size(); ++i) {
    const size_t s = shown[i];
    const int c = cols[s];
    const std::string use = errors_drawn(p, p.series[s]) ? fmt::format("1:{}:{}:{}", c, c + 1, c + 2) : fmt::format("1:{}", c);
    gp << (i ? ", \\\n     " : "")
       << fmt::format("$panel{} using {} with {} title {} noenhanced {}", index, use, line_with(p, s), quoted(p.series[s].title),
                      series_style(p, s));
  }
  gp << "\n";
}

struct Layout {
  int columns = 1, rows = 1;
  int panel_width = kWidth, title_height = 0, key_height = 0;
  int key_columns = 1;
  bool shared_key = false;
  int height() const { return title_height + key_height + rows * kPanelHeight; }
};

// Where panel `i` goes, in screen fractions of the canvas.
void write_position(std::ostream& gp, const Layout& l, size_t i) {
  const int col = static_cast<int>(i) % l.columns, row = static_cast<int>(i) / l.columns;
  const double h = l.height();
  gp << fmt::format("set origin {},{}\nset size {},{}\n", number(double(col * l.panel_width) / kWidth),
                    number((h - l.title_height - l.key_height - (row + 1) * kPanelHeight) / h),
                    number(double(l.panel_width) / kWidth), number(kPanelHeight / h));
}

void write_panel(std::ostream& gp, const PlotPanel& p, size_t index, const Layout& l) {
  const std::vector<size_t> shown = shown_series(p);
  gp << "reset\nset encoding utf8\nset grid ytics lc rgb '#dddddd'\n";
  write_position(gp, l, index);
  gp << fmt::format("set title {} font ',{}' noenhanced\n", quoted(p.title), kPanelTitleFont);
  if (!p.has_data()) {
    gp << "unset border\nunset tics\nunset key\n";
    gp << "set label 1 " << quoted("no data: none of this panel's systems ran") << " at graph 0.5,0.5 center\n";
    gp << "plot [0:1][0:1] NaN notitle\n";
    return;
  }
  gp << (l.shared_key ? "unset key\n" : fmt::format("set key above horizontal reverse Left font ',{}'\n", kKeyFont));
  gp << fmt::format("set tics font ',{}'\n", kTickFont);
  // Text is literal: parameter and field names carry underscores, which enhanced text subscripts.
  gp << "set xlabel " << quoted(p.xlabel) << " noenhanced\nset ylabel " << quoted(p.ylabel) << " noenhanced\n";
  if (p.logy) gp << "set logscale y 2\n";
  write_labels(gp, p, shown, l.panel_width);
  if (p.bars) {
    write_bars(gp, p, index, shown, l.panel_width);
  } else {
    write_lines(gp, p, index, shown);
  }
}

// One key for the figure when every panel with data draws the same series the same way.
std::vector<std::pair<const PlotPanel*, size_t>> shared_key_entries(const Plot& plot) {
  const PlotPanel* first = nullptr;
  std::vector<std::pair<const PlotPanel*, size_t>> entries;
  std::vector<bool> seen;
  for (const auto& p : plot.panels) {
    if (!p.has_data()) continue;
    if (!first) {
      first = &p;
      seen.assign(p.series.size(), false);
    }
    if (p.bars != first->bars || p.series.size() != first->series.size()) return {};
    for (size_t s = 0; s < p.series.size(); ++s) {
      if (p.series[s].title != first->series[s].title || p.series[s].dashed != first->series[s].dashed) return {};
      if (has_values(p.series[s])) seen[s] = true;
    }
  }
  for (size_t s = 0; first && s < first->series.size(); ++s) {
    if (seen[s]) entries.emplace_back(first, s);
  }
  return entries;
}

Layout layout(const Plot& plot) {
  Layout l;
  l.columns = std::max(1, std::min(plot.columns, static_cast<int>(plot.panels.size())));
  l.rows = static_cast<int>((plot.panels.size() + static_cast<size_t>(l.columns) - 1) / static_cast<size_t>(l.columns));
  l.panel_width = kWidth / l.columns;
  l.title_height = kTitleLine * (plot.note.empty() ? 1 : 2) + 10;
  const auto entries = shared_key_entries(plot);
  l.shared_key = !entries.empty();
  if (l.shared_key) {
    size_t longest = 0;
    for (const auto& [p, s] : entries) longest = std::max(longest, p->series[s].title.size());
    const int entry = text_width(std::string(longest, 'x'), kKeyFont) + 4 * kKeyFont + 20;
    l.key_columns = std::max(1, std::min(static_cast<int>(entries.size()), (kWidth - 40) / entry));
    const int key_rows = (static_cast<int>(entries.size()) + l.key_columns - 1) / l.key_columns;
    l.key_height = key_rows * kKeyLine + 12;
  }
  return l;
}

// The shared key: an empty plot across the canvas under the title whose only content is the key.
void write_shared_key(std::ostream& gp, const Plot& plot, const Layout& l) {
  const double h = l.height();
  gp << "reset\nset encoding utf8\nunset border\nunset tics\nset margins 0, 0, 0, 0\n";
  gp << fmt::format("set origin 0,{}\nset size 1,{}\n", number((h - l.title_height - l.key_height) / h),
                    number(l.key_height / h));
  gp << fmt::format("set key center center horizontal reverse Left maxcols {} font ',{}' samplen 2.5\n", l.key_columns, kKeyFont);
  gp << "set style fill solid 0.85 border -1\nplot [0:1][0:1] ";
  const auto entries = shared_key_entries(plot);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& [p, s] = entries[i];
    const std::string with = p->bars ? "boxes" : p->series[s].dashed ? "lines" : "linespoints";
    gp << (i ? ", \\\n     " : "")
       << fmt::format("NaN with {} title {} noenhanced {}", with, quoted(p->series[s].title), series_style(*p, s));
  }
  gp << "\n";
}

}  // namespace

bool PlotSeries::has_errors() const {
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(at(low, i)) || std::isfinite(at(high, i))) return true;
  }
  return false;
}

bool PlotPanel::has_data() const {
  for (const auto& s : series) {
    if (!s.dashed && has_values(s)) return true;
  }
  return false;
}

std::string gnuplot_script(const Plot& plot, const std::string& stem) {
  std::ostringstream gp;
  gp << "# Written by `moehub figures`; run `gnuplot " << stem << ".gp` in the figure folder.\n";
  for (size_t i = 0; i < plot.panels.size(); ++i) write_datablock(gp, plot.panels[i], i);
  const Layout l = layout(plot);
  // The same text size in both: SVG font sizes are px, pngcairo's points drawn at 96 dpi (4/3 px
  // each), hence its fontscale of 3/4.
  const std::vector<std::pair<std::string, std::string>> terminals{
      {fmt::format("svg size {},{} font 'Helvetica,{}' background rgb 'white'", kWidth, l.height(), kFont), stem + ".svg"},
      {fmt::format("pngcairo size {},{} font 'Helvetica,{}' fontscale 0.75 background rgb 'white'", kWidth, l.height(), kFont),
       stem + ".png"}};
  for (const auto& [terminal, output] : terminals) {
    gp << "\nset terminal " << terminal << "\nset output " << quoted(output) << "\n";
    gp << "reset\n";
    // The note (systems that did not run) is the title's second line, so it never covers a panel.
    const std::string title = plot.note.empty() ? plot.title : plot.title + "\n" + plot.note;
    gp << fmt::format("set multiplot title {} font ',{}' noenhanced\n", quoted(title), kTitleFont);
    if (l.shared_key) write_shared_key(gp, plot, l);
    for (size_t i = 0; i < plot.panels.size(); ++i) write_panel(gp, plot.panels[i], i, l);
    gp << "unset multiplot\nunset output\n";
  }
  return gp.str();
}
void render_plot(const Plot& plot, const fs::path& dir, const std::string& stem) {
  const fs::path gp_dir = dir / "gnuplot";
  fs::create_directories(gp_dir);
  const fs::path script = gp_dir / (stem + ".gp");
  const fs::path log = gp_dir / (stem + ".log");
  {
    std::ofstream out(script);
    out << gnuplot_script(plot, stem);
    if (!out) throw UserError(script.string(), "cannot write the gnuplot script");
  }
  const std::string script_arg = fs::absolute(script).string();
  const std::string log_arg = fs::absolute(log).string();
  const std::string dir_arg = fs::absolute(dir).string();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Child: no allocation-heavy work; the arguments were prepared above.
    const int fd = ::open(log_arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (::chdir(dir_arg.c_str()) != 0) ::_exit(126);
    ::execlp("gnuplot", "gnuplot", script_arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    throw UserError("gnuplot", "not found on PATH (install gnuplot-nox: scripts/install-deps.sh)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log);
    std::string first;
    std::getline(in, first);
    throw UserError(script.string(), "gnuplot failed: " + first + " (log: " + log.string() + ")");
  }
}

}  // namespace moehub
