#include "config/config_builder.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {
namespace {

// --nodes N: whole nodes of the hardware preset's net.gpus_per_node.
void apply_nodes(Config& c, const ConfigRequest& req) {
  if (req.nodes.empty()) return;
  for (const auto& f : req.flags) {
    if (f.path == "run.gpus") throw UserError("--nodes", fmt::format("give either --nodes or {}, not both", f.flag));
  }
  int64_t nodes = 0;
  try {
    size_t used = 0;
    nodes = std::stoll(req.nodes, &used);
    if (used != req.nodes.size()) nodes = 0;
  } catch (const std::exception&) {
    nodes = 0;
  }
  if (nodes < 1 || nodes > 4096) throw UserError("--nodes", fmt::format("'{}' is not a node count from 1 to 4096", req.nodes));
  const int64_t per_node = c.peek_integer("net.gpus_per_node", 0);
  if (per_node < 1) {
    throw UserError("--nodes", fmt::format("hardware '{}' is a single NVLink domain (net.gpus_per_node = 0); use a cluster "
                                           "preset such as h800-cluster",
                                           c.peek_string("run.hardware")));
  }
  c.set("run.gpus", std::to_string(nodes * per_node), "--nodes");
}

void apply_overrides(Config& c, const PresetCatalog& catalog, const ConfigRequest& req) {
  for (const auto& file : req.config_files) {
    catalog.merge_preset(c, PresetKind::Experiment, catalog.resolve(PresetKind::Experiment, file, "--config"));
  }
  for (const auto& f : req.flags) c.set(f.path, f.text, f.flag);
  for (const auto& a : req.assignments) c.set_assignment(a, "--set");
}

}  // namespace

Config build_config(const PresetCatalog& catalog, const ParamRegistry& registry, const ConfigRequest& req) {
  // First pass: only to learn which hardware and model presets the user asked for.
  Config names(registry);
  names.merge_file(catalog.defaults_file(), PresetCatalog::metadata_keys());
  apply_overrides(names, catalog, req);
  const std::string hardware = names.peek_string("run.hardware");
  const std::string model = names.peek_string("run.model");

  Config c(registry);
  c.merge_file(catalog.defaults_file(), PresetCatalog::metadata_keys());
  catalog.merge_preset(c, PresetKind::Hardware, catalog.resolve(PresetKind::Hardware, hardware, "run.hardware"));
  catalog.merge_preset(c, PresetKind::Model, catalog.resolve(PresetKind::Model, model, "run.model"));
  apply_overrides(c, catalog, req);
  apply_nodes(c, req);
  c.resolve();
  return c;
}

}  // namespace moehub
