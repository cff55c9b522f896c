// `moehub bench`: microbenchmarks of single layers; each sub-benchmark lives in its own file.

#include "cli/command.h"

namespace moehub {

void add_bench_command(CLI::App& app, CliContext& ctx) {
  auto* bench = app.add_subcommand("bench", "Microbenchmarks of single layers (network, ...)");
  bench->require_subcommand(1);
  add_bench_net_command(*bench, ctx);
}

}  // namespace moehub
