#include "figures/config_source.h"

#include "config/config_builder.h"

namespace moehub {

Config ConfigSource::build(const std::vector<SweepSetting>& settings) const {
  ConfigRequest req;
  for (const auto& s : settings) {
    if (s.path == "run.model") catalog_.resolve(PresetKind::Model, s.text, s.origin);
    if (s.path == "run.hardware") catalog_.resolve(PresetKind::Hardware, s.text, s.origin);
    req.flags.push_back({s.path, s.text, s.origin});
  }
  return build_config(catalog_, registry_, req);
}

}  // namespace moehub
