// libFuzzer target: arbitrary TOML text merged into a configuration and resolved against the
// full parameter registry. Bad input must be a UserError (exit 2 in the CLI); anything else
// escaping, or a sanitizer report, is a bug.

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "sim/error.h"
#include "systems/param_catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const moehub::ParamRegistry registry = moehub::build_param_registry();
  moehub::Config config(registry);
  try {
    config.merge_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml", {"description", "base"});
    config.resolve();
  } catch (const moehub::UserError&) {
  }
  return 0;
}
