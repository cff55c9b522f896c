// libFuzzer target: routing trace readers (CSV and JSONL) for a 4-token, 8-expert, top-2 layer.
// The first byte picks the format. Only UserError may escape.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "moe/routing_trace.h"
#include "sim/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const moehub::TraceFormat format = data[0] % 2 ? moehub::TraceFormat::Jsonl : moehub::TraceFormat::Csv;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  moehub::TraceExpectation expect;
  expect.tokens = 4;
  expect.experts = 8;
  expect.top_k = 2;
  expect.layer = 0;
  try {
    moehub::parse_routing_trace(in, "fuzz", format, expect);
  } catch (const moehub::UserError&) {
  }
  return 0;
}
