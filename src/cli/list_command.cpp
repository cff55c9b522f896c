// `moehub list`: the presets and every parameter with its unit, default and meaning.

#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "config/config_builder.h"

namespace moehub {

void add_list_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("list", "Print the presets and every parameter (unit, default, description)");
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, format] {
    ctx.action = [&ctx, format]() -> int {
      const PresetCatalog catalog = ctx.catalog();
      const Config defaults = build_config(catalog, *ctx.registry, ConfigRequest{});
      const PresetKind kinds[] = {PresetKind::Hardware, PresetKind::Model, PresetKind::Experiment};
      if (*format == "json") {
        nlohmann::json out;
        for (PresetKind k : kinds) {
          nlohmann::json list = nlohmann::json::array();
          for (const auto& p : catalog.list(k)) list.push_back({{"name", p.name}, {"description", p.description}});
          out["presets"][preset_kind_folder(k)] = list;
        }
        out["parameters"] = nlohmann::json::array();
        for (const ParamSpec& s : ctx.registry->all()) {
          out["parameters"].push_back({{"key", s.path},
                                       {"type", param_type_name(s.type)},
                                       {"unit", s.display_unit()},
                                       {"default", defaults.text(s.path)},
                                       {"description", s.description}});
        }
        std::cout << out.dump(2) << "\n";
        return 0;
      }
      for (PresetKind k : kinds) {
        std::cout << fmt::format("{} presets ({}/{}/):\n", preset_kind_folder(k), catalog.config_dir().string(),
                                 preset_kind_folder(k));
        for (const auto& p : catalog.list(k)) std::cout << fmt::format("  {:<22} {}\n", p.name, p.description);
      }
      std::cout << "\nparameters (override any with --set KEY=VALUE):\n";
      std::cout << fmt::format("  {:<34} {:<12} {:<14} {}\n", "key", "unit", "default", "description");
      for (const ParamSpec& s : ctx.registry->all()) {
        std::string unit = s.display_unit();
        if (unit.empty()) unit = param_type_name(s.type);
        std::cout << fmt::format("  {:<34} {:<12} {:<14} {}\n", s.path, unit, defaults.text(s.path), s.description);
      }
      return 0;
    };
  });
}

}  // namespace moehub
