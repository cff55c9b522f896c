#pragma once
// Routing trace files: one line per (token, layer) with the token's k expert ids and weights.
//   CSV   (.csv):   header `token,layer,experts,weights`, then e.g. `17,0,3;5,0.62;0.38`
//                   (lists separated by ';'; an empty weights field means 1/k each;
//                   blank lines and lines starting with '#' are skipped)
//   JSONL (.jsonl): {"token": 17, "layer": 0, "experts": [3, 5], "weights": [0.62, 0.38]}
//                   ("weights" optional; other keys ignored; blank lines skipped)
// Every line of every layer is checked; the chosen layer must list each token 0..M-1 once.
// Errors name the file and line. Format details: docs/workload.md.

#include <cstdint>
#include <filesystem>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "moe/routing.h"

namespace moehub {

enum class TraceFormat { Csv, Jsonl };

struct TraceExpectation {
  int64_t tokens = 0;   // run.tokens
  int64_t experts = 0;  // model.experts
  int64_t top_k = 0;    // model.top_k
  int64_t layer = 0;    // workload.trace_layer
};

// By extension (.csv; .jsonl or .ndjson); UserError naming workload.routing_trace otherwise.
TraceFormat trace_format_of(const std::filesystem::path& file);

Routing read_routing_trace(const std::filesystem::path& file, const TraceExpectation& expect);
// `name` stands for the file in error messages ("name:line").
Routing parse_routing_trace(std::istream& in, const std::string& name, TraceFormat format,
                            const TraceExpectation& expect);

// Rows per expert of layers first..last of the trace, summed (a placement's history,
// placement_history.h). Every line is checked as above; a layer in the range without lines is
// an error naming the file; the simulated layer need not be complete here.
std::vector<int64_t> read_trace_layer_loads(const std::filesystem::path& file, const TraceExpectation& expect,
                                            int64_t first, int64_t last);
std::vector<int64_t> parse_trace_layer_loads(std::istream& in, const std::string& name, TraceFormat format,
                                             const TraceExpectation& expect, int64_t first, int64_t last);

// Writes one layer in the given format (weights printed so that they read back exactly).
void write_routing_trace(std::ostream& out, const Routing& routing, int64_t layer, TraceFormat format);

}  // namespace moehub
