#include "config/config.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <functional>
#include <sstream>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <toml++/toml.h>

#include "sim/error.h"
#include "sim/units.h"

namespace moehub {
namespace {

std::string origin_of(const toml::node& n, const std::string& file) {
  const auto& src = n.source();
  return src.begin.line ? fmt::format("{}:{}", file, src.begin.line) : file;
}

bool parse_int(const std::string& s, int64_t& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e && !s.empty();
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

std::string trim(std::string s) {
  const auto ws = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), ws));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), ws).base(), s.end());
  return s;
}

std::string raw_kind(const std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>& r) {
  switch (r.index()) {
    case 0: return "an integer";
    case 1: return "a number";
    case 2: return "a boolean";
    case 3: return "a string";
    default: return "a list";
  }
}

std::string fmt_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

}  // namespace

void Config::put(const std::string& path, Raw raw, std::string origin) {
  raw_[path] = Entry{std::move(raw), std::move(origin)};
  resolved_ = false;
}

void Config::merge_file(const std::filesystem::path& file, const std::vector<std::string>& metadata_keys) {
  std::ifstream in(file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) || !in) throw UserError(file.string(), "no such file");
  std::ostringstream content;
  content << in.rdbuf();
  merge_text(content.str(), file.string(), metadata_keys);
}

void Config::merge_text(const std::string& toml_text, const std::string& origin,
                        const std::vector<std::string>& metadata_keys) {
  toml::table table;
  try {
    table = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& err) {
    throw UserError(fmt::format("{}:{}", origin, err.source().begin.line), std::string(err.description()));
  }
  std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& t,
                                                                          const std::string& prefix) {
    for (const auto& [key, node] : t) {
      const std::string k(key.str());
      if (prefix.empty() && std::find(metadata_keys.begin(), metadata_keys.end(), k) != metadata_keys.end()) continue;
      const std::string path = prefix.empty() ? k : prefix + "." + k;
      const std::string where = origin_of(node, origin);
      if (const auto* sub = node.as_table()) {
        if (registry_->find(path)) throw UserError(path, fmt::format("expected a value, found a table ({})", where));
        if (!registry_->is_section(path)) throw UserError(path, fmt::format("unknown section ({})", where));
        walk(*sub, path);
      } else if (!registry_->find(path)) {
        throw UserError(path, fmt::format("unknown key ({})", where));
      } else if (auto v = node.value_exact<int64_t>()) {
        put(path, *v, where);
      } else if (auto d = node.value_exact<double>()) {
        put(path, *d, where);
      } else if (auto b = node.value_exact<bool>()) {
        put(path, *b, where);
      } else if (auto s = node.value_exact<std::string>()) {
        put(path, *s, where);
      } else if (const auto* arr = node.as_array()) {
        std::vector<int64_t> list;
        for (const auto& el : *arr) {
          auto iv = el.value_exact<int64_t>();
          if (!iv) throw UserError(path, fmt::format("list elements must be integers ({})", where));
          list.push_back(*iv);
        }
        put(path, std::move(list), where);
      } else {
        throw UserError(path, fmt::format("unsupported value type ({})", where));
      }
    }
  };
  walk(table, "");
}

void Config::set(const std::string& path, const std::string& text_in, const std::string& origin) {
  const ParamSpec* spec = registry_->find(path);
  if (!spec) throw UserError(origin, fmt::format("unknown key '{}'", path));
  const std::string text = trim(text_in);
  switch (spec->type) {
    case ParamType::Integer: {
      int64_t v;
      if (!parse_int(text, v)) throw UserError(path, fmt::format("expected an integer, got '{}' ({})", text, origin));
      put(path, v, origin);
      break;
    }
    case ParamType::Real: {
      double v;
      if (!parse_double(text, v)) throw UserError(path, fmt::format("expected a number, got '{}' ({})", text, origin));
      put(path, v, origin);
      break;
    }
    case ParamType::Boolean:
      if (text == "true" || text == "1") put(path, true, origin);
      else if (text == "false" || text == "0") put(path, false, origin);
      else throw UserError(path, fmt::format("expected true or false, got '{}' ({})", text, origin));
      break;
    case ParamType::IntegerList: {
      std::string body = text;
      if (!body.empty() && body.front() == '[' && body.back() == ']') body = body.substr(1, body.size() - 2);
      std::vector<int64_t> list;
      size_t start = 0;
      while (start <= body.size() && !trim(body).empty()) {
        const size_t comma = body.find(',', start);
        const std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        int64_t v;
        if (!parse_int(item, v)) throw UserError(path, fmt::format("expected a list of integers, got '{}' ({})", text, origin));
        list.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      put(path, std::move(list), origin);
      break;
    }
    default:
      put(path, text, origin);
  }
}

void Config::set_assignment(const std::string& assignment, const std::string& origin) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError(origin, fmt::format("expected KEY=VALUE, got '{}'", assignment));
  }
  set(trim(assignment.substr(0, eq)), assignment.substr(eq + 1), origin);
}

Config::Typed Config::convert(const ParamSpec& spec, const Entry& e) const {
  const auto fail = [&](const std::string& why) -> UserError {
    return UserError(spec.path, fmt::format("{} (set at {})", why, e.origin));
  };
  const auto check_range = [&](double v, const std::string& shown) {
    if (spec.min) {
      if (spec.min_exclusive ? !(v > *spec.min) : !(v >= *spec.min)) {
        throw fail(spec.min_exclusive ? fmt::format("must be greater than {}, got {}", fmt_bound(*spec.min), shown)
                                      : fmt::format("must be at least {}, got {}", fmt_bound(*spec.min), shown));
      }
    }
    if (spec.max && v > *spec.max) {
      const std::string bound = spec.type == ParamType::Time ? format_time(Time::from_ps(static_cast<int64_t>(*spec.max)))
                                                             : fmt_bound(*spec.max);
      throw fail(fmt::format("must be at most {}, got {}", bound, shown));
    }
  };
  const auto want_string = [&]() -> const std::string& {
    if (const auto* s = std::get_if<std::string>(&e.raw)) return *s;
    throw fail(fmt::format("expected a {} written as a string such as \"{}\", got {}", param_type_name(spec.type),
                           spec.type == ParamType::Time        ? "250ns"
                           : spec.type == ParamType::Bandwidth ? "400GB/s"
                           : spec.type == ParamType::Frequency ? "1.98GHz"
                                                               : "text",
                           raw_kind(e.raw)));
  };
  try {
    switch (spec.type) {
      case ParamType::Integer: {
        const auto* v = std::get_if<int64_t>(&e.raw);
        if (!v) throw fail(fmt::format("expected an integer, got {}", raw_kind(e.raw)));
        check_range(static_cast<double>(*v), std::to_string(*v));
        return *v;
      }
      case ParamType::Real: {
        double v;
        if (const auto* i = std::get_if<int64_t>(&e.raw)) v = static_cast<double>(*i);
        else if (const auto* d = std::get_if<double>(&e.raw)) v = *d;
        else throw fail(fmt::format("expected a number, got {}", raw_kind(e.raw)));
        check_range(v, fmt::format("{}", v));
        return v;
      }
      case ParamType::Boolean: {
        const auto* v = std::get_if<bool>(&e.raw);
        if (!v) throw fail(fmt::format("expected true or false, got {}", raw_kind(e.raw)));
        return *v;
      }
      case ParamType::String:
        return want_string();
      case ParamType::Choice: {
        const std::string& s = want_string();
        if (std::find(spec.choices.begin(), spec.choices.end(), s) == spec.choices.end()) {
          throw fail(fmt::format("must be one of {}, got '{}'", fmt::join(spec.choices, ", "), s));
        }
        return s;
      }
      case ParamType::Time: {
        const Time t = parse_time(want_string());
        check_range(static_cast<double>(t.ps()), format_time(t));
        return t;
      }
      case ParamType::Bandwidth: {
        const Bandwidth b = parse_bandwidth(want_string());
        check_range(static_cast<double>(b.bytes_per_second()), format_bandwidth(b));
        return b;
      }
      case ParamType::Frequency: {
        const Frequency f = parse_frequency(want_string());
        check_range(static_cast<double>(f.hertz()), format_frequency(f));
        return f;
      }
      case ParamType::Bytes: {
        uint64_t b;
        if (const auto* i = std::get_if<int64_t>(&e.raw)) {
          if (*i < 0) throw fail("must not be negative");
          b = static_cast<uint64_t>(*i);
        } else {
          b = parse_bytes(want_string());
        }
        check_range(static_cast<double>(b), format_bytes(b));
        return b;
      }
      case ParamType::IntegerList: {
        const auto* v = std::get_if<std::vector<int64_t>>(&e.raw);
        if (!v) throw fail(fmt::format("expected a list of integers, got {}", raw_kind(e.raw)));
        for (int64_t x : *v) check_range(static_cast<double>(x), std::to_string(x));
        return *v;
      }
    }
  } catch (const UnitParseError& err) {
    throw fail(err.what());
  }
  throw std::logic_error("unhandled parameter type");
}

void Config::resolve() {
  typed_.clear();
  for (const auto& [path, entry] : raw_) {
    const ParamSpec* spec = registry_->find(path);
    if (!spec) throw UserError(path, fmt::format("unknown key (set at {})", entry.origin));
    typed_.emplace(path, convert(*spec, entry));
  }
  for (const ParamSpec& spec : registry_->all()) {
    if (!raw_.count(spec.path)) {
      throw UserError(spec.path, "missing: no preset, config file or --set gives it a value");
    }
  }
  resolved_ = true;
}

const Config::Typed& Config::typed(const std::string& path, ParamType expected) const {
  if (!resolved_) throw std::logic_error("Config read before resolve(): " + path);
  const ParamSpec* spec = registry_->find(path);
  if (!spec) throw std::logic_error("reading an undeclared parameter: " + path);
  const bool compatible = spec->type == expected || (expected == ParamType::String && spec->type == ParamType::Choice);
  if (!compatible) {
    throw std::logic_error(fmt::format("parameter {} is a {}, read as a {}", path, param_type_name(spec->type),
                                       param_type_name(expected)));
  }
  return typed_.at(path);
}

int64_t Config::integer(const std::string& p) const { return std::get<int64_t>(typed(p, ParamType::Integer)); }
uint32_t Config::integer_u32(const std::string& p) const {
  const int64_t v = integer(p);
  if (v < 0 || v > static_cast<int64_t>(UINT32_MAX)) {
    throw UserError(p, fmt::format("{} does not fit the 32-bit field it sets (at most {})", v, UINT32_MAX));
  }
  return static_cast<uint32_t>(v);
}
double Config::real(const std::string& p) const { return std::get<double>(typed(p, ParamType::Real)); }
bool Config::boolean(const std::string& p) const { return std::get<bool>(typed(p, ParamType::Boolean)); }
const std::string& Config::string(const std::string& p) const { return std::get<std::string>(typed(p, ParamType::String)); }
Time Config::time(const std::string& p) const { return std::get<Time>(typed(p, ParamType::Time)); }
Bandwidth Config::bandwidth(const std::string& p) const { return std::get<Bandwidth>(typed(p, ParamType::Bandwidth)); }
Frequency Config::frequency(const std::string& p) const { return std::get<Frequency>(typed(p, ParamType::Frequency)); }
uint64_t Config::bytes(const std::string& p) const { return std::get<uint64_t>(typed(p, ParamType::Bytes)); }
const std::vector<int64_t>& Config::integer_list(const std::string& p) const {
  return std::get<std::vector<int64_t>>(typed(p, ParamType::IntegerList));
}

std::string Config::peek_string(const std::string& path) const {
  auto it = raw_.find(path);
  if (it == raw_.end()) return "";
  const auto* s = std::get_if<std::string>(&it->second.raw);
  return s ? *s : "";
}

int64_t Config::peek_integer(const std::string& path, int64_t fallback) const {
  auto it = raw_.find(path);
  if (it == raw_.end()) return fallback;
  const auto* v = std::get_if<int64_t>(&it->second.raw);
  return v ? *v : fallback;
}

std::string Config::origin(const std::string& path) const {
  auto it = raw_.find(path);
  return it == raw_.end() ? "" : it->second.origin;
}

namespace {

nlohmann::json typed_to_json(const std::variant<int64_t, double, bool, std::string, Time, Bandwidth, Frequency,
                                                uint64_t, std::vector<int64_t>>& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Time>) return format_time(x);
        else if constexpr (std::is_same_v<T, Bandwidth>) return format_bandwidth(x);
        else if constexpr (std::is_same_v<T, Frequency>) return format_frequency(x);
        else return x;
      },
      v);
}

}  // namespace

std::string Config::text(const std::string& path) const {
  if (!resolved_) throw std::logic_error("Config::text before resolve()");
  const nlohmann::json j = typed_to_json(typed_.at(path));
  return j.is_string() ? j.get<std::string>() : j.dump();
}

nlohmann::json Config::to_json() const {
  if (!resolved_) throw std::logic_error("Config::to_json before resolve()");
  nlohmann::json root = nlohmann::json::object();
  for (const auto& [path, value] : typed_) {
    nlohmann::json* node = &root;
    size_t start = 0;
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
      node = &(*node)[path.substr(start, dot - start)];
      start = dot + 1;
    }
    (*node)[path.substr(start)] = typed_to_json(value);
  }
  return root;
}

}  // namespace moehub
