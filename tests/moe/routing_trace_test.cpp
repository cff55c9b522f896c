#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "moe/routing_trace.h"
#include "moe/synthetic_routing.h"
#include "sim/error.h"

namespace moehub {
namespace {

// 4 tokens, 8 experts, top-2, layer 0.
const TraceExpectation kExpect{4, 8, 2, 0};

Routing parse(const std::string& text, TraceFormat format, TraceExpectation expect = kExpect) {
  std::istringstream in(text);
  return parse_routing_trace(in, "t", format, expect);
}

// The error's `where` and reason for a trace that must be rejected.
std::pair<std::string, std::string> rejection(const std::string& text, TraceFormat format,
                                              TraceExpectation expect = kExpect) {
  try {
    parse(text, format, expect);
  } catch (const UserError& e) {
    return {e.where(), e.reason()};
  }
  return {"(accepted)", ""};
}

const char* kCsv =
    "# routing of a 4-token batch\n"
    "token,layer,experts,weights\n"
    "0,0,3;5,0.75;0.25\n"
    "1,0,0;7,0.5;0.5\n"
    "\n"
    "2,0,1;2,\n"
    "3,0,6;4,0.9;0.1\n"
    "0,1,1;2,0.5;0.5\n";

TEST(RoutingTrace, CsvReadsTheChosenLayer) {
  const Routing r = parse(kCsv, TraceFormat::Csv);
  EXPECT_EQ(r.expert(0, 0), 3);
  EXPECT_EQ(r.expert(0, 1), 5);
  EXPECT_FLOAT_EQ(r.weight(0, 0), 0.75f);
  EXPECT_EQ(r.expert(3, 0), 6);
  EXPECT_FLOAT_EQ(r.weight(2, 1), 0.5f);  // empty weights: 1/k each
  TraceExpectation layer1 = kExpect;
  layer1.layer = 1;
  EXPECT_EQ(rejection(kCsv, TraceFormat::Csv, layer1).first, "t");  // layer 1 lacks tokens 1..3
  EXPECT_NE(rejection(kCsv, TraceFormat::Csv, layer1).second.find("lacks token 1 and 2 more"), std::string::npos);
}

TEST(RoutingTrace, JsonlReadsTheChosenLayer) {
  const std::string text =
      "{\"token\": 0, \"layer\": 0, \"experts\": [3, 5], \"weights\": [0.75, 0.25]}\n"
      "{\"token\": 1, \"layer\": 0, \"experts\": [0, 7], \"weights\": [0.5, 0.5], \"note\": \"ignored\"}\n"
      "{\"token\": 2, \"layer\": 0, \"experts\": [1, 2]}\n"
      "\n"
      "{\"token\": 3, \"layer\": 0, \"experts\": [6, 4], \"weights\": [0.9, 0.1]}\n";
  const Routing r = parse(text, TraceFormat::Jsonl);
  EXPECT_EQ(r.expert(1, 1), 7);
  EXPECT_FLOAT_EQ(r.weight(3, 1), 0.1f);
  EXPECT_FLOAT_EQ(r.weight(2, 0), 0.5f);
}

TEST(RoutingTrace, BadLinesNameFileAndLine) {
  const std::string head = "token,layer,experts,weights\n";
  EXPECT_EQ(rejection(head + "0,0,3;8,0.5;0.5\n", TraceFormat::Csv),
            (std::pair<std::string, std::string>{"t:2", "expert id 8 is outside 0..7 (model.experts = 8)"}));
  EXPECT_EQ(rejection(head + "0,0,3;5,0.5;0.5\n1,0,1;2;3,\n", TraceFormat::Csv),
            (std::pair<std::string, std::string>{"t:3", "token 1 lists 3 experts; model.top_k = 2"}));
  EXPECT_EQ(rejection(head + "0,0,3\n", TraceFormat::Csv).first, "t:2");  // 3 fields
  EXPECT_EQ(rejection(head + "x,0,3;5,\n", TraceFormat::Csv).second, "token 'x' is not an integer");
  EXPECT_EQ(rejection(head + "0,0,3;a,\n", TraceFormat::Csv).first, "t:2");
  EXPECT_EQ(rejection(head + "0,0,3;5,0.5;nan\n", TraceFormat::Csv).first, "t:2");
  EXPECT_EQ(rejection(head + "0,0,3;3,\n", TraceFormat::Csv).second, "token 0 lists expert 3 twice");
  EXPECT_EQ(rejection(head + "0,0,3;5,\n0,0,1;2,\n", TraceFormat::Csv).second,
            "token 0 of layer 0 appears again (first at line 2)");
  EXPECT_EQ(rejection(head + "4,0,3;5,\n", TraceFormat::Csv).second, "token 4 is outside 0..3 (run.tokens = 4)");
  EXPECT_EQ(rejection(head + "0,0,3;5,0.5\n", TraceFormat::Csv).second, "token 0 lists 1 weights for 2 experts");
  EXPECT_EQ(rejection("token,experts\n", TraceFormat::Csv).first, "t:1");
  EXPECT_EQ(rejection("", TraceFormat::Csv).first, "t");
  EXPECT_EQ(rejection(head + "0,0,3;5,\n1,0,3;5,\n", TraceFormat::Csv).second,
            "layer 0 lacks token 2 and 1 more: every token 0..3 (run.tokens = 4) needs a line");

  EXPECT_EQ(rejection("{\"token\": 0, \"layer\": 0, \"experts\": [3, 5]\n", TraceFormat::Jsonl),
            (std::pair<std::string, std::string>{"t:1", "not a JSON object (malformed line)"}));
  EXPECT_EQ(rejection("{\"token\": 0, \"experts\": [3, 5]}\n", TraceFormat::Jsonl).second, "missing \"layer\"");
  EXPECT_EQ(rejection("{\"token\": 0.5, \"layer\": 0, \"experts\": [3, 5]}\n", TraceFormat::Jsonl).second,
            "\"token\" must be an integer");
  EXPECT_EQ(rejection("{\"token\": 0, \"layer\": 0, \"experts\": [3, -1]}\n", TraceFormat::Jsonl).second,
            "expert id -1 is outside 0..7 (model.experts = 8)");
  EXPECT_EQ(rejection("[1, 2]\n", TraceFormat::Jsonl).first, "t:1");
}

TEST(RoutingTrace, WrittenTracesReadBackExactly) {
  const Routing original = generate_synthetic_routing({64, 16, 2, 0.03, 7});
  for (TraceFormat format : {TraceFormat::Csv, TraceFormat::Jsonl}) {
    std::ostringstream out;
    write_routing_trace(out, original, 3, format);
    const Routing back = parse(out.str(), format, TraceExpectation{64, 16, 2, 3});
    EXPECT_EQ(back.expert_ids(), original.expert_ids());
    EXPECT_EQ(back.weights(), original.weights());
  }
}

TEST(RoutingTrace, FilesByExtension) {
  const auto dir = std::filesystem::temp_directory_path() / ("moehub-trace-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "r.csv") << kCsv;
  EXPECT_EQ(read_routing_trace(dir / "r.csv", kExpect).expert(1, 0), 0);
  try {
    read_routing_trace(dir / "r.txt", kExpect);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.routing_trace");
  }
  try {
    read_routing_trace(dir / "missing.jsonl", kExpect);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.routing_trace");
    EXPECT_NE(e.reason().find("no such file"), std::string::npos);
  }
  std::ofstream(dir / "bad.csv") << "token,layer,experts,weights\n0,0,9;1,\n";
  try {
    read_routing_trace(dir / "bad.csv", kExpect);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), (dir / "bad.csv").string() + ":2");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moehub
