#pragma once
// A resolved configuration: values merged from TOML files and command-line overrides (later
// wins), then checked against the ParamRegistry. Components read typed values by key path.
// Every error names the key path (and where the value came from).

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "config/param_registry.h"
#include "sim/bandwidth.h"
#include "sim/frequency.h"
#include "sim/time.h"

namespace moehub {

class Config {
 public:
  // The registry must outlive the Config.
  explicit Config(const ParamRegistry& registry) : registry_(&registry) {}

  // Merges a TOML file. Top-level keys listed in `metadata_keys` (e.g. "description", "base")
  // are skipped; everything else must be a declared parameter.
  void merge_file(const std::filesystem::path& file, const std::vector<std::string>& metadata_keys = {});
  // Merges TOML text (for tests and for `validate`); `origin` names it in errors.
  void merge_text(const std::string& toml_text, const std::string& origin,
                  const std::vector<std::string>& metadata_keys = {});
  // Sets one value from text, parsed by the parameter's declared type (for --set and flags).
  void set(const std::string& path, const std::string& text, const std::string& origin);
  // "key=value" as given to --set.
  void set_assignment(const std::string& assignment, const std::string& origin);

  // Checks every value's type and range and that every declared parameter is set.
  void resolve();
  bool resolved() const { return resolved_; }
  bool has(const std::string& path) const { return raw_.count(path) != 0; }
  // A string value as merged so far, before resolve() (used to pick presets); empty if unset.
  std::string peek_string(const std::string& path) const;
  // An integer value as merged so far, before resolve(); `fallback` if unset or not an integer.
  int64_t peek_integer(const std::string& path, int64_t fallback) const;

  int64_t integer(const std::string& path) const;
  // An integer that fills a 32-bit unsigned field: a value beyond it is the user's error,
  // named by its key, instead of a silent wrap.
  uint32_t integer_u32(const std::string& path) const;
  double real(const std::string& path) const;
  bool boolean(const std::string& path) const;
  const std::string& string(const std::string& path) const;  // String and Choice
  Time time(const std::string& path) const;
  Bandwidth bandwidth(const std::string& path) const;
  Frequency frequency(const std::string& path) const;
  uint64_t bytes(const std::string& path) const;
  const std::vector<int64_t>& integer_list(const std::string& path) const;

  // Where a value was set: "file:line", "--set" or a flag name.
  std::string origin(const std::string& path) const;
  // The value as it would be written in a config file (units kept), for listings.
  std::string text(const std::string& path) const;
  // The resolved configuration as a nested JSON object, keys sorted.
  nlohmann::json to_json() const;

  const ParamRegistry& registry() const { return *registry_; }

 private:
  using Raw = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
  struct Entry {
    Raw raw;
    std::string origin;
  };
  using Typed = std::variant<int64_t, double, bool, std::string, Time, Bandwidth, Frequency, uint64_t,
                             std::vector<int64_t>>;

  void put(const std::string& path, Raw raw, std::string origin);
  const Typed& typed(const std::string& path, ParamType expected) const;
  Typed convert(const ParamSpec& spec, const Entry& e) const;

  const ParamRegistry* registry_;
  std::map<std::string, Entry> raw_;
  std::map<std::string, Typed> typed_;
  bool resolved_ = false;
};

}  // namespace moehub
