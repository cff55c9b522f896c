#include "config/config_builder.h"

namespace moehub {
namespace {

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
  c.resolve();
  return c;
}

}  // namespace moehub
