// `moehub area`: storage bits of every MoE-Hub structure and the gates around them, from the hub
// configuration, priced with the configured densities and cell areas, beside the paper's own
// figure (VI-E).

#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "config/run_params.h"
#include "cli/command.h"
#include "config/config_builder.h"
#include "hub/area_model.h"
#include "hub/hub_config.h"

namespace moehub {
namespace {

struct AreaOptions {
  std::string hardware;
  std::vector<std::string> config_files;
  std::vector<std::string> assignments;
  std::string format = "table";
};

void print_storage(const AreaEstimate& e) {
  std::cout << fmt::format("MoE-Hub storage at {} nm, {:.1f} Mbit/mm^2 SRAM (hub.area.*)\n", e.technology_nm,
                           e.sram_mbit_per_mm2);
  std::cout << fmt::format("  {:<17} {:<15} {:>8} {:>10} {:>11} {:>10}  {}\n", "structure", "cell", "entries",
                           "bits/entry", "bits", "mm^2", "fields");
  for (const AreaItem& it : e.items) {
    std::cout << fmt::format("  {:<17} {:<15} {:>8} {:>10} {:>11} {:>10.5f}  {}\n", it.structure,
                             storage_cell_name(it.cell), it.entries, it.bits_per_entry, it.bits(), it.mm2, it.fields);
  }
  std::cout << fmt::format("  {:<17} {:<15} {:>8} {:>10} {:>11} {:>10.5f}  ({:.1f} KiB, {:.4f} % of the die)\n",
                           "storage total", "", "", "", e.total_bits, e.total_mm2,
                           static_cast<double>(e.total_bits) / 8192.0, 100.0 * e.die_fraction);
}

void print_logic(const AreaEstimate& e) {
  std::cout << fmt::format("\nMoE-Hub logic: 7 nm standard cells, {:.0f} % placement utilization (hub.area.*)\n",
                           100.0 * e.logic_utilization);
  std::cout << fmt::format("  {:<17} {:>7} {:>11} {:>9} {:>10}  {}\n", "block", "copies", "NAND2-eq", "FFs", "mm^2",
                           "one copy");
  for (const LogicItem& it : e.logic) {
    std::cout << fmt::format("  {:<17} {:>7} {:>11.0f} {:>9} {:>10.5f}  {}\n", it.block, it.copies, it.nand2_eq,
                             it.cells[LogicCell::FlipFlop], it.mm2, it.formula);
  }
  std::cout << fmt::format("  {:<17} {:>7} {:>11.0f} {:>9} {:>10.5f}  ({:.0f} um^2 of cells)\n", "logic total", "",
                           e.logic_nand2_eq, e.logic_cells[LogicCell::FlipFlop], e.logic_mm2, e.logic_cell_um2);
}

void print_table(const AreaEstimate& e) {
  print_storage(e);
  print_logic(e);
  std::cout << fmt::format("\ntotal: storage {:.4f} + logic {:.4f} = {:.4f} mm^2 ({:.4f} % of the die)\n",
                           e.total_mm2, e.logic_mm2, e.storage_and_logic_mm2, 100.0 * e.storage_and_logic_die_fraction);
  std::cout << fmt::format("paper VI-E: {:.2f} mm^2 at {} nm (storage and logic); docs/hub.md 5 explains the gap\n",
                           kPaperHubAreaMm2, kPaperHubAreaNodeNm);
}

}  // namespace

void add_area_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("area", "Storage and logic area estimate of the MoE-Hub structures");
  auto o = std::make_shared<AreaOptions>();
  cmd->add_option("--hardware", o->hardware, "Hardware preset name or TOML file");
  cmd->add_option("--config", o->config_files, "Experiment TOML file(s), applied in order");
  cmd->add_option("--set", o->assignments, "Override a parameter: KEY=VALUE (repeatable)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] {
    ctx.action = [&ctx, o]() -> int {
      ConfigRequest req;
      req.config_files = o->config_files;
      req.assignments = o->assignments;
      if (!o->hardware.empty()) req.flags.push_back({"run.hardware", o->hardware, "--hardware"});
      const Config cfg = build_config(ctx.catalog(), *ctx.registry, req);
      const AreaEstimate e = estimate_area(HubConfig::from(cfg));
      if (o->format == "json") {
        nlohmann::json j = e.to_json();
        j["hardware"] = RunParams::from(cfg).hardware;
        std::cout << j.dump(2) << "\n";
      } else {
        print_table(e);
      }
      return 0;
    };
  });
}

}  // namespace moehub
