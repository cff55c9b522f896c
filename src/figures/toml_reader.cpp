#include "figures/toml_reader.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/error.h"

namespace moehub {

toml::table parse_toml_file(const std::filesystem::path& file) {
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& err) {
    throw UserError(fmt::format("{}:{}", file.string(), err.source().begin.line), std::string(err.description()));
  }
}

std::string TomlReader::where(const toml::node& n) const {
  return fmt::format("{}:{}", file_.string(), n.source().begin.line);
}

std::string TomlReader::string(const toml::table& t, const char* key, const std::string& context,
                               bool required) const {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) throw UserError(file_.string(), fmt::format("{}: missing '{}'", context, key));
    return {};
  }
  if (!n->is_string()) throw UserError(where(*n), fmt::format("{}.{}: expected a string", context, key));
  return *n->value<std::string>();
}

double TomlReader::number(const toml::table& t, const char* key, const std::string& context) const {
  const toml::node* n = t.get(key);
  if (!n) throw UserError(file_.string(), fmt::format("{}: missing '{}'", context, key));
  if (!n->is_number()) throw UserError(where(*n), fmt::format("{}.{}: expected a number", context, key));
  return *n->value<double>();
}

bool TomlReader::boolean(const toml::table& t, const char* key, const std::string& context, bool fallback) const {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_boolean()) throw UserError(where(*n), fmt::format("{}.{}: expected true or false", context, key));
  return *n->value<bool>();
}

const toml::array& TomlReader::array(const toml::node& n, const std::string& key) const {
  const toml::array* a = n.as_array();
  if (!a) throw UserError(where(n), fmt::format("{}: expected an array", key));
  if (a->empty()) throw UserError(where(n), fmt::format("{}: empty", key));
  return *a;
}

std::vector<std::string> TomlReader::strings(const toml::node& n, const std::string& key) const {
  std::vector<std::string> out;
  for (const auto& e : array(n, key)) {
    if (!e.is_string()) throw UserError(where(e), fmt::format("{}: expected strings", key));
    out.push_back(*e.value<std::string>());
  }
  return out;
}

std::vector<int64_t> TomlReader::positive_integers(const toml::node& n, const std::string& key) const {
  std::vector<int64_t> out;
  for (const auto& e : array(n, key)) {
    if (!e.is_integer() || *e.value<int64_t>() < 1) {
      throw UserError(where(e), fmt::format("{}: expected positive integers", key));
    }
    out.push_back(*e.value<int64_t>());
  }
  return out;
}

std::vector<double> TomlReader::numbers(const toml::node& n, const std::string& key) const {
  std::vector<double> out;
  for (const auto& e : array(n, key)) {
    if (!e.is_number()) throw UserError(where(e), fmt::format("{}: expected numbers", key));
    out.push_back(*e.value<double>());
  }
  return out;
}

void TomlReader::only_keys(const toml::table& t, const std::vector<std::string>& known,
                           const std::string& context) const {
  for (const auto& [k, n] : t) {
    if (std::find(known.begin(), known.end(), std::string(k.str())) == known.end()) {
      throw UserError(where(n), fmt::format("{}: unknown key '{}' (known: {})", context, k.str(), fmt::join(known, ", ")));
    }
  }
}

}  // namespace moehub
