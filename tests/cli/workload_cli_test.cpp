// End-to-end tests of the workload through `moehub run`: the "workload" section of the JSON
// report, routing traces given with --routing-trace, and bad inputs (exit 2, one line).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

namespace fs = std::filesystem;

// Result, slurp, scratch_dir, moehub and expect_bad_input come from cli_support.h.

nlohmann::json workload_of(const std::vector<std::string>& extra) {
  // Only the workload section matters here: the ideal system alone keeps the run short.
  std::vector<std::string> args{"run", "--format", "json", "--systems", "ideal"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = moehub(args);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return nullptr;
  return nlohmann::json::parse(r.out)["workload"];
}


TEST(WorkloadCli, DefaultRunReportsUniformMixtralRouting) {
  const auto w = workload_of({});
  ASSERT_TRUE(w.is_object());
  EXPECT_EQ(w["source"], "synthetic");
  EXPECT_EQ(w["measured_std"].get<double>(), 0.0);
  EXPECT_EQ(w["tokens_per_expert"], std::vector<int64_t>(8, 2048));  // 8192 tokens x top-2 / 8
  EXPECT_EQ(w["tokens_per_gpu"], std::vector<int64_t>(8, 1024));
  EXPECT_GT(w["remote_fraction"].get<double>(), 0.8);  // about 7/8 of rows leave their GPU
  EXPECT_LT(w["remote_fraction"].get<double>(), 0.95);
  EXPECT_EQ(w["attention_per_gpu"]["tokens"], 1024);
}

TEST(WorkloadCli, ImbalanceMeasuresBackForThePaperModels) {
  for (const auto& [model, experts] : std::vector<std::pair<std::string, size_t>>{
           {"mixtral-8x7b", 8}, {"phi-3.5-moe", 16}, {"qwen2-moe-2.7b", 64}}) {
    const auto w = workload_of({"--model", model, "--imbalance", "0.032", "--seed", "7"});
    ASSERT_TRUE(w.is_object()) << model;
    EXPECT_EQ(w["tokens_per_expert"].size(), experts) << model;
    EXPECT_NEAR(w["measured_std"].get<double>(), 0.032, 0.0032) << model;
  }
}

TEST(WorkloadCli, SeedsChangeTheRoutingDeterministically) {
  const std::vector<std::string> a{"--imbalance", "0.02", "--seed", "4"};
  EXPECT_EQ(workload_of(a).dump(), workload_of(a).dump());
  EXPECT_NE(workload_of(a)["tokens_per_expert"], workload_of({"--imbalance", "0.02", "--seed", "5"})["tokens_per_expert"]);
}

TEST(WorkloadCli, RoutingTraceFromCsv) {
  const fs::path file = scratch_dir() / "routing.csv";
  std::ofstream(file) << "token,layer,experts,weights\n"
                         "0,0,0;1,0.5;0.5\n1,0,0;2,0.5;0.5\n2,0,0;3,\n3,0,7;6,0.9;0.1\n";
  const auto w = workload_of({"--routing-trace", file.string(), "--tokens", "4", "--gpus", "2"});
  ASSERT_TRUE(w.is_object());
  EXPECT_EQ(w["source"], "trace");
  EXPECT_EQ(w["tokens_per_expert"], (std::vector<int64_t>{3, 1, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(w["tokens_per_gpu"], (std::vector<int64_t>{2, 2}));
  // Experts 0-3 on GPU 0, 4-7 on GPU 1: tokens 0, 1 (GPU 0) stay; token 2 (GPU 1) sends 2 rows to
  // GPU 0; token 3 keeps both on GPU 1.
  EXPECT_EQ(w["rows_src_dst"], (nlohmann::json{{4, 0}, {2, 2}}));
  EXPECT_DOUBLE_EQ(w["remote_fraction"].get<double>(), 0.25);
}

TEST(WorkloadCli, ExplicitExpertMapAllowsMoreGpusThanExperts) {
  const auto w = workload_of({"--gpus", "16", "--set", "workload.expert_map=[0,2,4,6,8,10,12,14]"});
  ASSERT_TRUE(w.is_object());
  EXPECT_EQ(w["expert_gpu"], (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(w["rows_into_gpu"][1], 0);
}

TEST(WorkloadCli, BadInputs) {
  expect_bad_input({"run", "--set", "model.top_k=9"}, "model.top_k: 9 exceeds the number of experts");
  expect_bad_input({"run", "--gpus", "16"}, "model.experts: 8 experts do not divide over 16 GPUs");
  expect_bad_input({"run", "--gpus", "16"}, "workload.expert_map");
  // The fix it names: 16 - 8 % 16 = 8 replicas, 16 physical experts, one per GPU (and 12 GPUs:
  // 12 - 8 % 12 = 4 replicas, 12 physical experts).
  expect_bad_input({"run", "--gpus", "16"}, "workload.redundant_experts=8 for 16 physical experts (1 per GPU");
  expect_bad_input({"run", "--gpus", "12"}, "workload.redundant_experts=4 for 12 physical experts (1 per GPU");
  EXPECT_TRUE(workload_of({"--gpus", "16", "--set", "workload.redundant_experts=8"}).is_object());
  expect_bad_input({"run", "--gpus", "4", "--set", "workload.expert_map=[0,1,2,3,4,5,6,7]"},
                   "workload.expert_map: entry 4 (expert 4) is GPU 4");
  expect_bad_input({"run", "--tokens", "4"}, "run.tokens: 4 tokens cannot be partitioned over 8 GPUs");
  expect_bad_input({"run", "--imbalance", "0.4"}, "workload.imbalance_std: 0.4 is not reachable");
  expect_bad_input({"run", "--routing-trace", "routing.txt"}, "workload.routing_trace: 'routing.txt': unknown trace format");
  expect_bad_input({"run", "--routing-trace", "/nonexistent/r.csv"}, "workload.routing_trace: no such file");
}

TEST(WorkloadCli, BadTracesNameFileAndLine) {
  const fs::path dir = scratch_dir();
  const fs::path csv = dir / "bad.csv";
  std::ofstream(csv) << "token,layer,experts,weights\n0,0,0;1,\n1,0,9;1,\n";
  expect_bad_input({"run", "--routing-trace", csv.string(), "--tokens", "2", "--gpus", "2"},
                   csv.string() + ":3: expert id 9 is outside 0..7 (model.experts = 8)");
  const fs::path jsonl = dir / "bad.jsonl";
  std::ofstream(jsonl) << "{\"token\": 0, \"layer\": 0, \"experts\": [0, 1]}\n{\"token\": 1, \"layer\": 0, \"experts\": [2\n";
  expect_bad_input({"run", "--routing-trace", jsonl.string(), "--tokens", "2", "--gpus", "2"},
                   jsonl.string() + ":2: not a JSON object (malformed line)");
  const fs::path count = dir / "count.jsonl";
  std::ofstream(count) << "{\"token\": 0, \"layer\": 0, \"experts\": [0, 1, 2]}\n";
  expect_bad_input({"run", "--routing-trace", count.string(), "--tokens", "2", "--gpus", "2"},
                   count.string() + ":1: token 0 lists 3 experts; model.top_k = 2");
  const fs::path short_trace = dir / "short.csv";
  std::ofstream(short_trace) << "token,layer,experts,weights\n0,0,0;1,\n";
  expect_bad_input({"run", "--routing-trace", short_trace.string(), "--tokens", "2", "--gpus", "2"},
                   short_trace.string() + ": layer 0 lacks token 1");
  // A number beyond a double is the file's fault, not an internal error.
  const fs::path huge = dir / "huge.jsonl";
  std::ofstream(huge) << "{\"token\": 0, \"layer\": 0, \"experts\": [0, 1], \"weights\": [1e400, 0.5]}\n";
  expect_bad_input({"run", "--routing-trace", huge.string(), "--tokens", "2", "--gpus", "2"},
                   huge.string() + ":1: a number is out of range");
}

}  // namespace

// Issue 24 item 2 (paper VII-A2) at a small size: every system runs with redundant experts,
// MoE-Hub's hub picks a replica per row with either policy, and functional mode still
// reproduces the reference (a replicated expert's rows reach one replica each and combine).
TEST(WorkloadCli, RedundantExpertsRunEverySystem) {
  const Result r = moehub({"run", "--format", "json", "--model", "deepseek-v2-lite", "--gpus", "8", "--tokens", "512",
                           "--imbalance", "0.02", "--set", "workload.redundant_experts=8", "--systems", "all"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& rep = j["workload"]["replication"];
  EXPECT_EQ(j["workload"]["redundant_experts"], 8);
  EXPECT_EQ(rep["physical_experts"], 72);  // 64 + 8, 9 per GPU
  EXPECT_EQ(j["workload"]["tokens_per_expert"].size(), 64u);
  int64_t physical_rows = 0;
  for (const auto& n : rep["tokens_per_physical_expert"]) physical_rows += n.get<int64_t>();
  EXPECT_EQ(physical_rows, 512 * 6);
  EXPECT_LT(rep["max_tokens_per_physical_expert"].get<int64_t>(), j["workload"]["max_tokens_per_expert"].get<int64_t>());
  ASSERT_EQ(j["results"].size(), 11u);
  for (const auto& res : j["results"]) {
    EXPECT_GT(res["layer_us"].get<double>(), 0.0) << res["system"];
    if (res["system"] != "moehub") continue;
    const auto& hub = res["hub"]["replica"];
    EXPECT_EQ(hub["policy"], "round-robin");
    EXPECT_GT(hub["lookups"].get<uint64_t>(), 0u);
    EXPECT_EQ(hub["round_robin_selections"], hub["lookups"]);
    EXPECT_GT(hub["table_mm2"].get<double>(), 0.0);
  }
  const Result la = moehub({"run", "--format", "json", "--model", "deepseek-v2-lite", "--gpus", "8", "--tokens", "512",
                            "--imbalance", "0.02", "--set", "workload.redundant_experts=8", "--set",
                            "hub.apt.replica_policy=load-aware", "--systems", "moehub"});
  ASSERT_EQ(la.status, 0) << la.err;
  const auto aware = nlohmann::json::parse(la.out)["results"][0]["hub"]["replica"];
  EXPECT_EQ(aware["load_aware_selections"], aware["lookups"]);
  for (const char* policy : {"round-robin", "load-aware"}) {
    const Result v = moehub({"verify", "--systems", "all", "--imbalance", "0.03", "--set", "workload.redundant_experts=4",
                             "--set", std::string("hub.apt.replica_policy=") + policy});
    EXPECT_EQ(v.status, 0) << v.out << v.err;
    EXPECT_NE(v.out.find("8 experts (+4 redundant)"), std::string::npos) << v.out;
  }
}

TEST(WorkloadCli, RedundantExpertsBadInputs) {
  expect_bad_input({"run", "--set", "workload.redundant_experts=8", "--set", "workload.expert_map=[0,1,2,3,4,5,6,7]"},
                   "workload.redundant_experts: redundant experts are placed by EPLB");
  expect_bad_input({"run", "--gpus", "16", "--set", "workload.redundant_experts=4"},
                   "workload.redundant_experts: 8 experts + 4 redundant = 12 physical experts leave some of the 16 GPUs");
  expect_bad_input({"run", "--model", "deepseek-v2-lite", "--tokens", "512", "--imbalance", "0.02", "--set",
                    "workload.redundant_experts=8", "--set", "hub.apt.replica_entries=1", "--systems", "moehub"},
                   "hub.apt.replica_entries: 8 logical experts have replicas");
}

// EPLB placing from a past batch (docs/workload.md "Placement from past batches"): the
// placement moves, the routing does not, and every system still reproduces the reference.
TEST(WorkloadCli, PreviousPlacementVerifies) {
  const Result v = moehub({"verify", "--systems", "all", "--imbalance", "0.03", "--set", "workload.redundant_experts=4",
                           "--set", "workload.placement_load=previous", "--set", "workload.placement_window=2"});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  expect_bad_input({"run", "--set", "workload.placement_load=sometimes"}, "workload.placement_load");
  expect_bad_input({"run", "--set", "workload.placement_window=0"}, "workload.placement_window");
}
