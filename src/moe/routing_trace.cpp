#include "moe/routing_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/error.h"

namespace moehub {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t pos = s.find(sep); pos != std::string::npos; pos = s.find(sep, start)) {
    out.push_back(trim(s.substr(start, pos - start)));
    start = pos + 1;
  }
  out.push_back(trim(s.substr(start)));
  return out;
}

bool parse_int(const std::string& s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

bool parse_real(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

// One parsed line before it is checked against the model.
struct Entry {
  int64_t token = 0;
  int64_t layer = 0;
  std::vector<int64_t> experts;
  std::vector<double> weights;  // empty: 1/k each
};

// Collects and checks entries; builds the chosen layer's routing.
class TraceBuilder {
 public:
  TraceBuilder(std::string name, const TraceExpectation& e)
      : name_(std::move(name)), expect_(e), routing_(e.tokens, e.experts, e.top_k) {}

  void add(const Entry& entry, int64_t line) {
    const auto fail = [&](const std::string& why) { return UserError(fmt::format("{}:{}", name_, line), why); };
    if (entry.token < 0 || entry.token >= expect_.tokens) {
      throw fail(fmt::format("token {} is outside 0..{} (run.tokens = {})", entry.token, expect_.tokens - 1,
                             expect_.tokens));
    }
    if (entry.layer < 0) throw fail(fmt::format("layer {} is negative", entry.layer));
    if (static_cast<int64_t>(entry.experts.size()) != expect_.top_k) {
      throw fail(fmt::format("token {} lists {} experts; model.top_k = {}", entry.token, entry.experts.size(),
                             expect_.top_k));
    }
    if (!entry.weights.empty() && entry.weights.size() != entry.experts.size()) {
      throw fail(fmt::format("token {} lists {} weights for {} experts", entry.token, entry.weights.size(),
                             entry.experts.size()));
    }
    for (size_t j = 0; j < entry.experts.size(); ++j) {
      const int64_t e = entry.experts[j];
      if (e < 0 || e >= expect_.experts) {
        throw fail(fmt::format("expert id {} is outside 0..{} (model.experts = {})", e, expect_.experts - 1,
                               expect_.experts));
      }
      if (std::find(entry.experts.begin(), entry.experts.begin() + static_cast<long>(j), e) !=
          entry.experts.begin() + static_cast<long>(j)) {
        throw fail(fmt::format("token {} lists expert {} twice", entry.token, e));
      }
    }
    for (double w : entry.weights) {
      if (!(w >= 0) || !std::isfinite(w)) throw fail(fmt::format("weight {} must be a finite number >= 0", w));
    }
    auto& seen = seen_[entry.layer];
    if (seen.empty()) seen.assign(static_cast<size_t>(expect_.tokens), 0);
    int64_t& first = seen[static_cast<size_t>(entry.token)];
    if (first != 0) {
      throw fail(fmt::format("token {} of layer {} appears again (first at line {})", entry.token, entry.layer, first));
    }
    first = line;
    if (entry.layer >= count_first_ && entry.layer <= count_last_) {
      for (const int64_t e : entry.experts) ++counted_[static_cast<size_t>(e)];
    }
    if (entry.layer != expect_.layer) return;
    const double k = static_cast<double>(expect_.top_k);
    for (size_t j = 0; j < entry.experts.size(); ++j) {
      const double w = entry.weights.empty() ? 1.0 / k : entry.weights[j];
      routing_.set(entry.token, static_cast<int64_t>(j), static_cast<int32_t>(entry.experts[j]), static_cast<float>(w));
    }
  }

  Routing finish() {
    auto it = seen_.find(expect_.layer);
    if (it == seen_.end()) {
      throw UserError(name_, fmt::format("has no routing for layer {} (workload.trace_layer)", expect_.layer));
    }
    int64_t missing = 0, first_missing = -1;
    for (int64_t t = 0; t < expect_.tokens; ++t) {
      if (it->second[static_cast<size_t>(t)] == 0) {
        if (missing++ == 0) first_missing = t;
      }
    }
    if (missing > 0) {
      throw UserError(name_, fmt::format("layer {} lacks token {}{}: every token 0..{} (run.tokens = {}) needs a line",
                                         expect_.layer, first_missing,
                                         missing > 1 ? fmt::format(" and {} more", missing - 1) : "",
                                         expect_.tokens - 1, expect_.tokens));
    }
    return std::move(routing_);
  }

  // Rows per expert summed over layers [first, last] (set before the lines are added).
  void count_layers(int64_t first, int64_t last) {
    count_first_ = first;
    count_last_ = last;
    counted_.assign(static_cast<size_t>(expect_.experts), 0);
  }
  std::vector<int64_t> counted() const {
    for (int64_t l = count_first_; l <= count_last_; ++l) {
      if (!seen_.count(l)) throw UserError(name_, fmt::format("has no routing for layer {} (an earlier layer the "
                                                              "placement's history reads: workload.placement_window)",
                                                              l));
    }
    return counted_;
  }

 private:
  std::string name_;
  TraceExpectation expect_;
  Routing routing_;
  std::map<int64_t, std::vector<int64_t>> seen_;  // layer -> line of each token (0 = not yet)
  int64_t count_first_ = 0, count_last_ = -1;      // layers whose rows are counted (none by default)
  std::vector<int64_t> counted_;
};

Entry parse_csv_line(const std::string& text, const std::string& where) {
  const std::vector<std::string> fields = split(text, ',');
  if (fields.size() != 4) {
    throw UserError(where, fmt::format("expected 4 comma-separated fields (token,layer,experts,weights), found {}",
                                       fields.size()));
  }
  Entry e;
  if (!parse_int(fields[0], e.token)) throw UserError(where, fmt::format("token '{}' is not an integer", fields[0]));
  if (!parse_int(fields[1], e.layer)) throw UserError(where, fmt::format("layer '{}' is not an integer", fields[1]));
  for (const std::string& item : split(fields[2], ';')) {
    int64_t id;
    if (!parse_int(item, id)) {
      throw UserError(where, fmt::format("experts '{}' is not a ';'-separated list of integers", fields[2]));
    }
    e.experts.push_back(id);
  }
  if (!fields[3].empty()) {
    for (const std::string& item : split(fields[3], ';')) {
      double w;
      if (!parse_real(item, w)) {
        throw UserError(where, fmt::format("weights '{}' is not a ';'-separated list of numbers", fields[3]));
      }
      e.weights.push_back(w);
    }
  }
  return e;
}

Entry parse_jsonl_line(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    throw UserError(where, "not a JSON object (malformed line)");
  } catch (const nlohmann::json::out_of_range&) {
    throw UserError(where, "a number is out of range (beyond what a double holds)");
  }
  if (!j.is_object()) throw UserError(where, "expected a JSON object {\"token\", \"layer\", \"experts\", \"weights\"}");
  const auto integer = [&](const char* key) -> int64_t {
    if (!j.contains(key)) throw UserError(where, fmt::format("missing \"{}\"", key));
    if (!j[key].is_number_integer()) throw UserError(where, fmt::format("\"{}\" must be an integer", key));
    return j[key].get<int64_t>();
  };
  Entry e;
  e.token = integer("token");
  e.layer = integer("layer");
  if (!j.contains("experts") || !j["experts"].is_array()) {
    throw UserError(where, "\"experts\" must be a list of expert ids");
  }
  for (const auto& x : j["experts"]) {
    if (!x.is_number_integer()) throw UserError(where, "\"experts\" must be a list of integers");
    e.experts.push_back(x.get<int64_t>());
  }
  if (j.contains("weights")) {
    if (!j["weights"].is_array()) throw UserError(where, "\"weights\" must be a list of numbers");
    for (const auto& x : j["weights"]) {
      if (!x.is_number()) throw UserError(where, "\"weights\" must be a list of numbers");
      e.weights.push_back(x.get<double>());
    }
  }
  return e;
}

}  // namespace

TraceFormat trace_format_of(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".csv") return TraceFormat::Csv;
  if (ext == ".jsonl" || ext == ".ndjson") return TraceFormat::Jsonl;
  throw UserError("workload.routing_trace",
                  fmt::format("'{}': unknown trace format; name it .csv or .jsonl (see docs/workload.md)", file.string()));
}

namespace {

std::ifstream open_trace(const std::filesystem::path& file) {
  std::error_code ec;
  std::ifstream in(file);
  if (!std::filesystem::is_regular_file(file, ec) || !in) {
    throw UserError("workload.routing_trace", fmt::format("no such file '{}'", file.string()));
  }
  return in;
}

void parse_trace_lines(std::istream& in, const std::string& name, TraceFormat format, TraceBuilder& builder) {
  bool header_seen = format == TraceFormat::Jsonl;
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::string text = trim(line);
    if (text.empty()) continue;
    const std::string where = fmt::format("{}:{}", name, line_no);
    if (format == TraceFormat::Csv) {
      if (text[0] == '#') continue;
      if (!header_seen) {
        const std::vector<std::string> cols = split(text, ',');
        if (cols != std::vector<std::string>{"token", "layer", "experts", "weights"}) {
          throw UserError(where, "expected the header line 'token,layer,experts,weights'");
        }
        header_seen = true;
        continue;
      }
      builder.add(parse_csv_line(text, where), line_no);
    } else {
      builder.add(parse_jsonl_line(text, where), line_no);
    }
  }
  if (!header_seen) throw UserError(name, "empty trace: expected the header line 'token,layer,experts,weights'");
}

}  // namespace

Routing read_routing_trace(const std::filesystem::path& file, const TraceExpectation& expect) {
  const TraceFormat format = trace_format_of(file);
  std::ifstream in = open_trace(file);
  return parse_routing_trace(in, file.string(), format, expect);
}

Routing parse_routing_trace(std::istream& in, const std::string& name, TraceFormat format,
                            const TraceExpectation& expect) {
  TraceBuilder builder(name, expect);
  parse_trace_lines(in, name, format, builder);
  return builder.finish();
}

std::vector<int64_t> read_trace_layer_loads(const std::filesystem::path& file, const TraceExpectation& expect,
                                            int64_t first, int64_t last) {
  const TraceFormat format = trace_format_of(file);
  std::ifstream in = open_trace(file);
  return parse_trace_layer_loads(in, file.string(), format, expect, first, last);
}

std::vector<int64_t> parse_trace_layer_loads(std::istream& in, const std::string& name, TraceFormat format,
                                             const TraceExpectation& expect, int64_t first, int64_t last) {
  TraceBuilder builder(name, expect);
  builder.count_layers(first, last);
  parse_trace_lines(in, name, format, builder);
  return builder.counted();
}

void write_routing_trace(std::ostream& out, const Routing& routing, int64_t layer, TraceFormat format) {
  if (format == TraceFormat::Csv) out << "token,layer,experts,weights\n";
  for (int64_t t = 0; t < routing.tokens(); ++t) {
    std::vector<int32_t> ids;
    std::vector<float> weights;
    for (int64_t j = 0; j < routing.top_k(); ++j) {
      ids.push_back(routing.expert(t, j));
      weights.push_back(routing.weight(t, j));
    }
    if (format == TraceFormat::Csv) {
      out << fmt::format("{},{},{},{}\n", t, layer, fmt::join(ids, ";"), fmt::join(weights, ";"));
    } else {
      out << fmt::format("{{\"token\":{},\"layer\":{},\"experts\":[{}],\"weights\":[{}]}}\n", t, layer,
                         fmt::join(ids, ","), fmt::join(weights, ","));
    }
  }
}

}  // namespace moehub
