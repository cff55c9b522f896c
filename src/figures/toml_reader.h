#pragma once
// Typed reads from the TOML of a figure or sweep file, naming "file:line" and the key path in
// every error (UserError), so a bad file gets one line that points at the culprit.

#include <cstdint>
#include <filesystem>
#include <string>
#include <toml++/toml.h>
#include <vector>

namespace moehub {

// Parses `file`; a syntax error becomes UserError("<file>:<line>", description).
toml::table parse_toml_file(const std::filesystem::path& file);

class TomlReader {
 public:
  explicit TomlReader(std::filesystem::path file) : file_(std::move(file)) {}

  const std::filesystem::path& file() const { return file_; }
  std::string where(const toml::node& n) const;  // "file:line"

  std::string string(const toml::table& t, const char* key, const std::string& context, bool required) const;
  double number(const toml::table& t, const char* key, const std::string& context) const;
  bool boolean(const toml::table& t, const char* key, const std::string& context, bool fallback) const;
  // A non-empty array (UserError "<key>: empty" otherwise).
  const toml::array& array(const toml::node& n, const std::string& key) const;
  std::vector<std::string> strings(const toml::node& n, const std::string& key) const;
  std::vector<int64_t> positive_integers(const toml::node& n, const std::string& key) const;
  std::vector<double> numbers(const toml::node& n, const std::string& key) const;
  // Every key of `t` must be in `known` (UserError naming the first other one).
  void only_keys(const toml::table& t, const std::vector<std::string>& known, const std::string& context) const;

 private:
  std::filesystem::path file_;
};

}  // namespace moehub
