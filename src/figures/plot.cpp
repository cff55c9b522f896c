#include "figures/plot.h"

#include <algorithm>
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

constexpr int kPanelWidth = 640;
constexpr int kPanelHeight = 380;
constexpr int kMinWidth = 1000;

void write_datablock(std::ostream& gp, const PlotPanel& p, size_t index) {
  gp << fmt::format("$panel{} << EOD\n", index);
  const size_t rows = p.bars ? p.categories.size() : p.x.size();
  for (size_t r = 0; r < rows; ++r) {
    gp << (p.bars ? quoted(p.categories[r]) : number(p.x[r]));
    for (const auto& s : p.series) gp << " " << number(r < s.y.size() ? s.y[r] : NAN);
    gp << "\n";
  }
  gp << "EOD\n";
}

bool has_values(const PlotSeries& s) {
  for (double v : s.y) {
    if (std::isfinite(v)) return true;
  }
  return false;
}

// Series without a single value are left out: gnuplot rejects an empty histogram column.
void write_panel(std::ostream& gp, const PlotPanel& p, size_t index) {
  std::vector<size_t> shown;
  for (size_t s = 0; s < p.series.size(); ++s) {
    if (has_values(p.series[s])) shown.push_back(s);
  }
  gp << "reset\nset encoding utf8\nset grid ytics lc rgb '#dddddd'\nset key outside right top vertical font ',9'\n";
  gp << "set title " << quoted(p.title) << "\n";
  if (!p.has_data()) {
    gp << "unset border\nunset tics\nunset key\n";
    gp << "set label 1 " << quoted("no data: none of this panel's systems ran") << " at graph 0.5,0.5 center\n";
    gp << "plot [0:1][0:1] NaN notitle\n";
    return;
  }
  gp << "set xlabel " << quoted(p.xlabel) << "\nset ylabel " << quoted(p.ylabel) << "\n";
  if (p.logy) gp << "set logscale y 2\n";
  if (p.bars) {
    gp << "set style data histograms\n"
       << (p.stacked ? "set style histogram rowstacked\nset boxwidth 0.6\n" : "set style histogram clustered gap 1\nset boxwidth 0.9\n")
       << "set style fill solid 0.85 border -1\nset yrange [" << (p.stacked ? "*" : "0") << ":*]\nset xtics rotate by -30\n";
    gp << "plot ";
    for (size_t i = 0; i < shown.size(); ++i) {
      const size_t s = shown[i];
      gp << (i ? ", \\\n     " : "") << fmt::format("$panel{} using {}", index, s + 2);
      if (i == 0) gp << ":xtic(1)";
      gp << " title " << quoted(p.series[s].title) << fmt::format(" lc {}", s + 1);
    }
    gp << "\n";
    return;
  }
  if (p.logx) gp << "set logscale x 2\n";
  gp << "set xtics (";
  for (size_t i = 0; i < p.x.size(); ++i) gp << (i ? ", " : "") << quoted(number(p.x[i])) << " " << number(p.x[i]);
  gp << ")\nset offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05\n";
  gp << "plot ";
  for (size_t i = 0; i < shown.size(); ++i) {
    const size_t s = shown[i];
    gp << (i ? ", \\\n     " : "")
       << fmt::format("$panel{} using 1:{} with linespoints title {} lc {} pt {} lw 1.5 dt {}", index, s + 2,
                      quoted(p.series[s].title), s + 1, (s % 7) + 1, p.series[s].dashed ? 2 : 1);
  }
  gp << "\n";
}

}  // namespace

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
  const int columns = std::max(1, std::min(plot.columns, static_cast<int>(plot.panels.size())));
  const int rows = static_cast<int>((plot.panels.size() + static_cast<size_t>(columns) - 1) / static_cast<size_t>(columns));
  const int width = std::max(kMinWidth, kPanelWidth * columns);  // room for the title and note
  const int height = kPanelHeight * rows + 40 + (plot.note.empty() ? 0 : 20);
  const std::vector<std::pair<std::string, std::string>> terminals{
      {fmt::format("svg size {},{} font 'Helvetica,11' background rgb 'white'", width, height), stem + ".svg"},
      {fmt::format("pngcairo size {},{} font 'Helvetica,10' background rgb 'white'", width, height), stem + ".png"}};
  for (const auto& [terminal, output] : terminals) {
    gp << "\nset terminal " << terminal << "\nset output " << quoted(output) << "\n";
    gp << "reset\n";
    // The note (systems that did not run) is the title's second line, so it never covers a panel.
    const std::string title = plot.note.empty() ? plot.title : plot.title + "\n" + plot.note;
    gp << fmt::format("set multiplot layout {},{} title {} font ',12'\n", rows, columns, quoted(title));
    for (size_t i = 0; i < plot.panels.size(); ++i) write_panel(gp, plot.panels[i], i);
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
