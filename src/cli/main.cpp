// moehub: a packet- and thread-block-level simulator of MoE-Hub and the MoE systems it is
// compared with. Exit status: 0 success, 2 bad input (one line on stderr), 1 internal fault.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <iostream>

#include "cli/command.h"
#include "systems/param_catalog.h"
#include "sim/error.h"

#ifndef MOEHUB_DEFAULT_CONFIG_DIR
#define MOEHUB_DEFAULT_CONFIG_DIR "configs"
#endif

namespace {

int user_error(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  std::cerr << "moehub: error: " << line << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moehub;
  try {
    const ParamRegistry registry = build_param_registry();
    CliContext ctx;
    ctx.registry = &registry;
    const char* env_dir = std::getenv("MOEHUB_CONFIG_DIR");
    ctx.config_dir = env_dir && *env_dir ? env_dir : MOEHUB_DEFAULT_CONFIG_DIR;

    CLI::App app{"moehub: simulator of MoE-Hub and of the MoE expert-parallel systems it is compared with"};
    app.set_version_flag("--version", "moehub 0.1.0");
    app.add_option("--config-dir", ctx.config_dir, "Folder of presets (hardware/, models/, experiments/)");
    app.require_subcommand(1);
    add_run_command(app, ctx);
    add_list_command(app, ctx);
    add_validate_command(app, ctx);
    add_verify_command(app, ctx);
    add_bench_command(app, ctx);
    add_area_command(app, ctx);
    add_figures_command(app, ctx);
    add_sweep_command(app, ctx);
    add_accuracy_command(app, ctx);

    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      const std::string what = e.what();
      return user_error(what.rfind("--", 0) == 0 ? what : "command line: " + what);
    }
    const int status = ctx.action ? ctx.action() : 0;
    // A report that did not reach stdout (a full disk, a closed pipe) is a failed run.
    std::cout.flush();
    if (!std::cout) return user_error("stdout: writing the output failed");
    return status;
  } catch (const UserError& e) {
    return user_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "moehub: internal error: " << e.what() << "\n";
    return 1;
  }
}
