#include "config/param_registry.h"

#include <stdexcept>

namespace moehub {

const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::Integer: return "integer";
    case ParamType::Real: return "number";
    case ParamType::Boolean: return "boolean";
    case ParamType::String: return "string";
    case ParamType::Choice: return "choice";
    case ParamType::Time: return "time";
    case ParamType::Bandwidth: return "bandwidth";
    case ParamType::Frequency: return "frequency";
    case ParamType::Bytes: return "size";
    case ParamType::IntegerList: return "integer list";
  }
  return "?";
}

std::string ParamSpec::display_unit() const {
  switch (type) {
    case ParamType::Time: return "time (ps..s)";
    case ParamType::Bandwidth: return "B/s";
    case ParamType::Frequency: return "Hz";
    case ParamType::Bytes: return "bytes";
    default: return unit;
  }
}

ParamSpec& ParamRegistry::add(std::string path, ParamType type, std::string description) {
  if (index_.count(path)) throw std::logic_error("parameter declared twice: " + path);
  index_[path] = specs_.size();
  ParamSpec& s = specs_.emplace_back();
  s.path = std::move(path);
  s.type = type;
  s.description = std::move(description);
  return s;
}

void ParamRegistry::add(const ParamSpec& spec) { add(spec.path, spec.type, spec.description) = spec; }

ParamSpec& ParamRegistry::integer(std::string p, std::string d) { return add(std::move(p), ParamType::Integer, std::move(d)); }
ParamSpec& ParamRegistry::real(std::string p, std::string d) { return add(std::move(p), ParamType::Real, std::move(d)); }
ParamSpec& ParamRegistry::boolean(std::string p, std::string d) { return add(std::move(p), ParamType::Boolean, std::move(d)); }
ParamSpec& ParamRegistry::string(std::string p, std::string d) { return add(std::move(p), ParamType::String, std::move(d)); }
// Times are picoseconds in 64 bits (about 106 days); no parameter may exceed 10^6 s, so sums of
// a few stay representable. A parameter may lower the bound.
ParamSpec& ParamRegistry::time(std::string p, std::string d) {
  return add(std::move(p), ParamType::Time, std::move(d)).at_most(1e18);
}
ParamSpec& ParamRegistry::bandwidth(std::string p, std::string d) { return add(std::move(p), ParamType::Bandwidth, std::move(d)); }
ParamSpec& ParamRegistry::frequency(std::string p, std::string d) { return add(std::move(p), ParamType::Frequency, std::move(d)); }
ParamSpec& ParamRegistry::bytes(std::string p, std::string d) { return add(std::move(p), ParamType::Bytes, std::move(d)); }
ParamSpec& ParamRegistry::integer_list(std::string p, std::string d) { return add(std::move(p), ParamType::IntegerList, std::move(d)); }
ParamSpec& ParamRegistry::choice(std::string p, std::vector<std::string> c, std::string d) {
  ParamSpec& s = add(std::move(p), ParamType::Choice, std::move(d));
  s.choices = std::move(c);
  return s;
}

const ParamSpec* ParamRegistry::find(const std::string& path) const {
  auto it = index_.find(path);
  return it == index_.end() ? nullptr : &specs_[it->second];
}

bool ParamRegistry::is_section(const std::string& prefix) const {
  auto it = index_.lower_bound(prefix + ".");
  return it != index_.end() && it->first.compare(0, prefix.size() + 1, prefix + ".") == 0;
}

}  // namespace moehub
