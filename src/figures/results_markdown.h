#pragma once
// docs/RESULTS.md from what `moehub figures` wrote: the headline table beside the paper's,
// the rows that differ by more than 15 % with the explanation people wrote in table.toml
// (the generator writes no explanation of its own), the code count, the area table, and
// links to every figure.

#include <string>
#include <vector>

#include "figures/figure_data.h"

namespace moehub {

struct WrittenFigure {
  const FigureSpec* spec = nullptr;
  FigureOutput output;
  std::string note;  // which systems did not run
};

// `link_prefix` is prepended to file names in links (the figure folder relative to the
// Markdown file). `quick` says which sweep the numbers come from.
std::string results_markdown(const std::vector<WrittenFigure>& figures, const FigureContext& context,
                             const std::string& link_prefix, bool quick);

}  // namespace moehub
