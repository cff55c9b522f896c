// `moehub bench`: microbenchmarks of one component at a time; each sub-benchmark lives in its
// own file (bench_net_command.cpp, bench_gemm_command.cpp).

#include "cli/command.h"

namespace moehub {

void add_bench_command(CLI::App& app, CliContext& ctx) {
  auto* bench = app.add_subcommand("bench", "Microbenchmarks of single components (network, GEMM)");
  bench->require_subcommand(1);
  add_bench_net_command(*bench, ctx);
  add_bench_gemm_command(*bench, ctx);
  add_bench_host_command(*bench, ctx);
}

}  // namespace moehub
