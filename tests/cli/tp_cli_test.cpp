// End-to-end tests of EP+TP (`--tp`, parallel.tp; issue 24 item 1, paper VII-A1): the systems
// that model it run and verify, every other system refuses with one line (exit 2).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

// 8 GPUs as EP 4 x TP 2, Mixtral (8 experts, F = 14336), a small layer.
TEST(TpCli, RunsIdealAndMoeHubUnderTp2) {
  const Result r = moehub({"run", "--format", "json", "--tp", "2", "--gpus", "8", "--model", "mixtral-8x7b",
                           "--tokens", "256", "--systems", "ideal,moehub"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& tp = j["workload"]["tp"];
  EXPECT_EQ(tp["tp"], 2);
  EXPECT_EQ(tp["ep"], 4);
  EXPECT_EQ(tp["shard_ffn"], 7168);
  EXPECT_EQ(tp["shard_experts"], 16);
  EXPECT_EQ(tp["shard_rows"], 256 * 2 * 2);  // tokens x top-2 x TP 2
  // Expert e's shards on GPUs 2 (e / 2) and 2 (e / 2) + 1.
  EXPECT_EQ(j["workload"]["expert_gpu"], (std::vector<int64_t>{0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7}));
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& res : j["results"]) EXPECT_GT(res["layer_us"].get<double>(), 0.0) << res["system"];
  // MoE-Hub: one st.rowsp per shard, so twice the rows of pure EP at the same token count.
  const Result ep = moehub({"run", "--format", "json", "--gpus", "8", "--model", "mixtral-8x7b", "--tokens", "256",
                            "--systems", "moehub"});
  ASSERT_EQ(ep.status, 0) << ep.err;
  const auto hub_tp = j["results"][1]["hub"], hub_ep = nlohmann::json::parse(ep.out)["results"][0]["hub"];
  EXPECT_EQ(hub_tp["aau"]["rows_allocated"].get<uint64_t>(), 2 * hub_ep["aau"]["rows_allocated"].get<uint64_t>());
}

TEST(TpCli, VerifyReducesShardPartialsToTheReference) {
  for (const char* tp : {"2", "4"}) {
    const Result v = moehub({"verify", "--tp", tp, "--systems", "ideal,megatron-te,deepep,comet,mh-base,mh-pkt,mh-dep,moehub"});
    EXPECT_EQ(v.status, 0) << v.out << v.err;
    EXPECT_NE(v.out.find(std::string("x TP ") + tp + ")"), std::string::npos) << v.out;
  }
}

// TP 8 on 8 GPUs: one TP group, no EP all-to-all; Megatron all-gathers and reduce-scatters
// over all 8 GPUs, DeepEP sends every token to all 8 shards, Comet pushes each row to all 8.
TEST(TpCli, VerifyPassesWithOneTpGroup) {
  const Result v = moehub({"verify", "--tp", "8", "--systems", "ideal,megatron-te,deepep,comet"});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  // flux's own layer0 (copy-engine gets of every token shard) under TP as well.
  const Result f = moehub({"verify", "--tp", "2", "--systems", "comet", "--set", "systems.comet.dispatch=copy_engine_gets"});
  EXPECT_EQ(f.status, 0) << f.out << f.err;
}

// `--systems all` means every system that models the configuration: the others are listed
// with their reason, in the JSON and on one line of the text reports; naming one still refuses.
TEST(TpCli, AllRunsEverySystemWithATpModelAndListsTheOthers) {
  const Result r = moehub({"run", "--format", "json", "--tp", "2", "--tokens", "256", "--systems", "all"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> ran, skipped;
  for (const auto& res : j["results"]) ran.push_back(res["system"]);
  for (const auto& s : j["skipped"]) skipped.push_back(s["system"]);
  EXPECT_EQ(ran, (std::vector<std::string>{"ideal", "megatron-te", "deepep", "comet", "mh-base", "mh-pkt", "mh-dep", "moehub"}));
  EXPECT_EQ(skipped, (std::vector<std::string>{"fastermoe", "tutel", "ccfuser"}));
  const std::string reason = j["skipped"][0]["reason"];
  EXPECT_EQ(reason.rfind("has no EP+TP model: FastMoE v1.1.0 never shards an expert's weights", 0), 0u) << reason;
  EXPECT_NE(reason.find("fmoe/megatron/layers.py L82-84, L151"), std::string::npos) << reason;
  EXPECT_TRUE(reason.ends_with("; run it with parallel.tp = 1 (got 2) (parallel.tp)")) << reason;
  const Result v = moehub({"verify", "--tp", "2", "--systems", "all"});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("left out of 'all' (no model of this configuration): fastermoe: has no EP+TP model"), std::string::npos)
      << v.out;
  // Without TP every system applies and the report has no `skipped`.
  const Result p = moehub({"run", "--format", "json", "--tokens", "256", "--systems", "ideal"});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_FALSE(nlohmann::json::parse(p.out).contains("skipped"));
}

// Tutel's parallel_type 'model' (docs/research/tutel-model-parallel.md): Mixtral's 8 experts on
// 16 GPUs, each sharded over N / E = 2 GPUs; any other TP degree is refused with the code's reason.
TEST(TpCli, TutelRunsAndVerifiesItsModelParallelPath) {
  const std::string model = "systems.tutel.parallel_type=model";
  const Result r = moehub({"run", "--format", "json", "--gpus", "16", "--tp", "2", "--model", "mixtral-8x7b", "--tokens",
                           "512", "--systems", "tutel", "--set", model});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["stats"]["sharded_count"], 2);
  EXPECT_GT(j["results"][0]["layer_us"].get<double>(), 0.0);
  const Result v = moehub({"verify", "--gpus", "16", "--tp", "2", "--model", "mixtral-8x7b", "--systems", "tutel", "--set", model});
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  expect_bad_input({"run", "--gpus", "16", "--tp", "4", "--tokens", "256", "--systems", "tutel", "--set", model},
                   "parallel.tp: system 'tutel' runs EP+TP only at parallel.tp = N / E");
}

TEST(TpCli, SystemsWithoutTpRefuseAndBadShapesNameTheKey) {
  // Each says what its code does instead, with the citation (docs/systems/ep-tp.md).
  for (const auto& [s, cited] : std::vector<std::pair<std::string, std::string>>{
           {"fastermoe", "laekov/fastmoe @5b60285"},
           {"tutel", "microsoft/tutel @71db950 tutel/impls/moe_layer.py L102-106"},
           {"ccfuser", "WongHuLin/CCFuser @3e1990e mix_moe/mix_moe/layers.py L33-60"}}) {
    expect_bad_input({"run", "--tp", "2", "--tokens", "256", "--systems", s},
                     "parallel.tp: system '" + s + "' has no EP+TP model: ");
    expect_bad_input({"run", "--tp", "2", "--tokens", "256", "--systems", s}, cited);
  }
  expect_bad_input({"run", "--tp", "3", "--systems", "ideal"}, "parallel.tp: 3 does not divide run.gpus = 8");
  expect_bad_input({"run", "--tp", "2", "--set", "workload.redundant_experts=8", "--systems", "ideal"},
                   "parallel.tp: EP+TP places experts in contiguous blocks");
}

}  // namespace
