// `moehub validate FILE`: checks a preset or experiment file against every declared parameter.

#include <fmt/format.h>
#include <iostream>

#include "cli/command.h"
#include "cli/config_builder.h"

namespace moehub {

void add_validate_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("validate", "Check a config file: unknown keys, types, ranges, units");
  auto file = std::make_shared<std::string>();
  cmd->add_option("FILE", *file, "TOML file (hardware, model or experiment)")->required();
  cmd->callback([&ctx, file] {
    ctx.action = [&ctx, file]() -> int {
      ConfigRequest req;
      req.config_files.push_back(*file);
      const Config c = build_config(ctx.catalog(), *ctx.registry, req);
      std::cout << fmt::format("{}: ok ({} parameters resolved)\n", *file, ctx.registry->all().size());
      return 0;
    };
  });
}

}  // namespace moehub
