#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>

#include "moe/workload.h"
#include "moe_test_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

Workload build(const ParamRegistry& r, const std::string& model, const std::string& extra = "") {
  const Config c = test::workload_config(r, model, extra);
  return Workload::build(WorkloadConfig::from(c), ModelShape::from(c));
}

std::string where_of(const ParamRegistry& r, const std::string& model, const std::string& extra) {
  try {
    build(r, model, extra);
  } catch (const UserError& e) {
    return e.where();
  }
  return "(no error)";
}

TEST(Workload, SyntheticSummary) {
  const ParamRegistry r = test::workload_registry();
  const Workload w = build(r, "mixtral-8x7b", "[workload]\nimbalance_std = 0.032\n");
  const nlohmann::json s = w.summary();
  EXPECT_EQ(s["source"], "synthetic");
  EXPECT_DOUBLE_EQ(s["requested_std"].get<double>(), 0.032);
  EXPECT_NEAR(s["measured_std"].get<double>(), 0.032, 0.0032);
  EXPECT_EQ(s["routed_rows"], 16384);
  EXPECT_EQ(s["tokens_per_gpu"], std::vector<int64_t>(8, 1024));
  const auto per_expert = s["tokens_per_expert"].get<std::vector<int64_t>>();
  EXPECT_EQ(std::accumulate(per_expert.begin(), per_expert.end(), int64_t{0}), 16384);
  int64_t matrix_sum = 0, diagonal = 0;
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 8; ++j) matrix_sum += s["rows_src_dst"][i][j].get<int64_t>();
    diagonal += s["rows_src_dst"][i][i].get<int64_t>();
  }
  EXPECT_EQ(matrix_sum, 16384);
  EXPECT_EQ(s["remote_rows"], 16384 - diagonal);
  EXPECT_DOUBLE_EQ(s["remote_fraction"].get<double>(), static_cast<double>(16384 - diagonal) / 16384.0);
  EXPECT_EQ(s["attention_per_gpu"]["tokens"], 1024);
  EXPECT_EQ(s["attention_per_gpu"]["output_projection"]["flops"], 34359738368u);
}

TEST(Workload, BadInputsNameTheirKey) {
  const ParamRegistry r = test::workload_registry();
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[run]\ntokens = 4\n"), "run.tokens");
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[run]\ngpus = 16\n"), "model.experts");
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[run]\ngpus = 16\n[workload]\nexpert_map = [0, 2, 4, 6, 8, 10, 12, 14]\n"),
            "(no error)");
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[workload]\nexpert_map = [0, 1, 2]\n"), "workload.expert_map");
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[workload]\nimbalance_std = 0.5\n"), "workload.imbalance_std");
  EXPECT_EQ(where_of(r, "qwen1.5-moe-a2.7b", ""), "model.experts");  // 60 experts, 8 GPUs
  EXPECT_EQ(where_of(r, "qwen1.5-moe-a2.7b", "[run]\ngpus = 4\n"), "(no error)");
}

TEST(Workload, TraceSourceAndTokensPerGpuWhenNotDivisible) {
  const auto dir = std::filesystem::temp_directory_path() / ("moehub-workload-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "trace.jsonl";
  {
    std::ofstream out(file);
    for (int t = 0; t < 10; ++t) {
      out << "{\"token\": " << t << ", \"layer\": 2, \"experts\": [" << t % 8 << ", " << (t + 1) % 8 << "]}\n";
    }
  }
  const ParamRegistry r = test::workload_registry();
  const std::string extra = "[run]\ngpus = 4\ntokens = 10\n[workload]\ntrace_layer = 2\nrouting_trace = \"" +
                            file.string() + "\"\n";
  const Workload w = build(r, "mixtral-8x7b", extra);
  const nlohmann::json s = w.summary();
  EXPECT_EQ(s["source"], "trace");
  EXPECT_EQ(s["trace_layer"], 2);
  EXPECT_FALSE(s.contains("requested_std"));
  EXPECT_EQ(s["tokens_per_gpu"], (std::vector<int64_t>{3, 3, 2, 2}));
  // Token t goes to experts t % 8 and (t + 1) % 8: expert 0 gets tokens 0, 7, 8; expert 1 gets 0, 1, 8, 9; ...
  EXPECT_EQ(s["tokens_per_expert"], (std::vector<int64_t>{3, 4, 3, 2, 2, 2, 2, 2}));
  EXPECT_EQ(s["attention_per_gpu"]["tokens"], 3);
  EXPECT_EQ(where_of(r, "mixtral-8x7b", "[run]\ngpus = 4\ntokens = 12\n[workload]\ntrace_layer = 2\nrouting_trace = \"" +
                                            file.string() + "\"\n"),
            file.string());  // tokens 10 and 11 missing
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moehub
