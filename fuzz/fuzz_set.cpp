// libFuzzer target: `--set KEY=VALUE` assignments (every declared type's parser) applied to
// the shipped defaults (Mixtral-8x7B on the DGX-H800), then resolved. Only UserError may
// escape.

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "config/config_builder.h"
#include "config/preset_catalog.h"
#include "sim/error.h"
#include "systems/param_catalog.h"

#ifndef MOEHUB_SOURCE_CONFIG_DIR
#error "MOEHUB_SOURCE_CONFIG_DIR must name the configs folder"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moehub::ParamRegistry registry = moehub::build_param_registry();
  static const moehub::Config defaults =
      moehub::build_config(moehub::PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry, moehub::ConfigRequest{});
  moehub::Config config = defaults;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // One assignment per line, as repeated --set flags.
    size_t at = 0;
    while (at <= text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      config.set_assignment(text.substr(at, end - at), "--set");
      at = end + 1;
    }
    config.resolve();
  } catch (const moehub::UserError&) {
  }
  return 0;
}
