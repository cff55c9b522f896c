#pragma once
// A figure's experiment file (configs/experiments/<name>.toml with a [figure] table): what to
// draw and the sweep of runs behind it. The [figure], [sweep], [[headline]] and [[table_i]]
// sections are read here and never reach Config; everything else in the file must be a
// declared parameter (checked by `moehub validate`). A sweep file in the same folder (a [sweep]
// with [[plot]]s and no [figure]) is a figure of kind "sweep": its CSV and plots are what
// `moehub sweep` writes. Format: docs/figures.md.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "figures/sweep_file.h"
#include "figures/sweep_spec.h"

namespace moehub {

struct Headline {
  std::string name;
  std::string section;  // the paper section the value comes from
  double paper = 0;
  std::string figure;
  std::string field;    // a result field: layer_us, e2e_ms, routing_to_gemm1_us
  std::vector<std::pair<std::string, std::string>> pairs;  // mean of field(first) / field(second)
  std::optional<std::pair<int64_t, int64_t>> token_range;  // inclusive filter on total tokens
  std::string explanation;  // written by people; empty until then
};

struct TableIEntry {
  std::string system;
  std::string scheduling;     // the paper's "host / device" text
  std::string communication;
};

struct FigureSpec {
  std::string name;  // file stem
  std::filesystem::path file;
  std::string kind;  // fig3 ... fig17, sweep, table, area
  std::string title;
  std::string description;
  std::string baseline;    // speedups over this system (fig13-15)
  std::string speedup_of;  // speedups of this system over each other (fig12, fig16)
  std::string hardware;    // area
  std::optional<SweepAxes> sweep;
  std::optional<SweepAxes> quick;  // sweep with the [sweep.quick] overrides applied
  std::vector<Headline> headlines;
  std::vector<TableIEntry> table_i;
  std::vector<SweepPlot> plots;  // kind "sweep": the file's [[plot]]s

  bool has_sweep() const { return sweep.has_value(); }
  const SweepAxes& axes(bool quick_subset) const;
  std::vector<SweepPoint> points(bool quick_subset) const;
  // Figures whose data this one reads (the table reads its headlines' figures).
  std::vector<std::string> depends_on() const;
};

// The kinds `moehub figures` knows how to draw.
const std::vector<std::string>& figure_kinds();
// Top-level sections of a figure file that are not parameters.
const std::vector<std::string>& figure_sections();

// True if the TOML file has a [figure] table. Throws UserError on a TOML syntax error.
bool is_figure_file(const std::filesystem::path& file);
FigureSpec load_figure_spec(const std::filesystem::path& file);
// A sweep file as a figure of kind "sweep" (title: its description, else its name).
FigureSpec sweep_figure_spec(const SweepFile& sweep);
// The sweep file a figure of kind "sweep" came from.
SweepFile sweep_file_of(const FigureSpec& spec);
// Every figure file and sweep file in `dir`, in the order of figure_kinds(), then by name.
std::vector<FigureSpec> load_figure_specs(const std::filesystem::path& dir);

}  // namespace moehub
