// End-to-end tests of `moehub sweep`: tidy CSV rows over crossed, zipped and seed axes, the seeds'
// spread, plots, the run cache, figure files as sweep files, --keep-going, and bad sweep files
// (one line naming file:line and key). Runs only the `ideal` system on 2 GPUs.

#include <gtest/gtest.h>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string c; std::getline(in, c, ',');) out.push_back(c);
  return out;
}

// 2 token counts x 2 zipped RAT settings x 2 seeds = 8 points, one system.
constexpr const char* kSweep = R"(description = "tiny"
[sweep]
gpus = [2]
tokens = [256, 512]
seeds = [1, 2]
systems = ["ideal"]
set = ["workload.imbalance_std=0.03"]   # skewed routing: the seeds give different layers

[[sweep.zip]]
"hub.rat.entries" = [512, 1024]
"hub.rat.banks" = [8, 16]

[[plot]]
name = "t"
x = "tokens"
y = "layer_us"
series = "hub.rat.entries"
)";

Result sweep(const fs::path& file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"sweep", file.string(), "--out", (file.parent_path() / "out").string(), "--jobs", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return moehub(args);
}

TEST(SweepCli, WritesTidyRowsTheSeedsSpreadAndPlots) {
  const fs::path file = scratch_dir() / "tiny.toml";
  write_file(file, kSweep);
  const Result r = sweep(file);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const auto rows = lines(slurp(file.parent_path() / "out" / "tiny.csv"));
  ASSERT_EQ(rows.size(), 9u);  // header + 8 points x 1 system
  EXPECT_EQ(rows[0].rfind("gpus,tokens,hub.rat.entries,hub.rat.banks,seed,system,status,layer_us,", 0), 0u) << rows[0];
  // The zip advances its two axes together, seeds vary fastest.
  EXPECT_EQ(rows[1].rfind("2,256,512,8,1,ideal,ok,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("2,256,512,8,2,ideal,ok,", 0), 0u) << rows[2];
  EXPECT_EQ(rows[3].rfind("2,256,1024,16,1,ideal,ok,", 0), 0u) << rows[3];
  EXPECT_EQ(rows[8].rfind("2,512,1024,16,2,ideal,ok,", 0), 0u) << rows[8];

  const auto spread = lines(slurp(file.parent_path() / "out" / "tiny-seeds.csv"));
  ASSERT_EQ(spread.size(), 5u);  // header + 4 (tokens, zip) pairs
  const auto head = cells(spread[0]);
  ASSERT_GE(head.size(), 9u);
  EXPECT_EQ(head[4], "system");
  EXPECT_EQ(head[5], "seeds");
  EXPECT_EQ(head[6], "layer_us_mean");
  const auto first = cells(spread[1]);
  EXPECT_EQ(first[0], "2");
  EXPECT_EQ(first[5], "2");  // both seeds ran
  const double mean = std::stod(first[6]), low = std::stod(first[7]), high = std::stod(first[8]);
  const double seed1 = std::stod(cells(rows[1])[7]), seed2 = std::stod(cells(rows[2])[7]);
  EXPECT_NE(seed1, seed2);
  EXPECT_NEAR(mean, (seed1 + seed2) / 2, 1e-3 * mean);
  EXPECT_NEAR(low, std::min(seed1, seed2), 1e-5 * mean);
  EXPECT_NEAR(high, std::max(seed1, seed2), 1e-5 * mean);
  EXPECT_TRUE(fs::exists(file.parent_path() / "out" / "tiny-t.png"));
  EXPECT_TRUE(fs::exists(file.parent_path() / "out" / "tiny-t.svg"));
}

TEST(SweepCli, SecondRunReadsTheCacheAndWritesTheSameBytes) {
  const fs::path file = scratch_dir() / "tiny.toml";
  write_file(file, kSweep);
  ASSERT_EQ(sweep(file).status, 0);
  const std::string first = slurp(file.parent_path() / "out" / "tiny.csv");
  const Result again = sweep(file);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("0 runs computed, 8 cached"), std::string::npos) << again.err;
  EXPECT_EQ(slurp(file.parent_path() / "out" / "tiny.csv"), first);
}

TEST(SweepCli, AFigureFileIsASweepFile) {
  const fs::path file = scratch_dir() / "fig.toml";
  write_file(file, "[figure]\nkind = \"fig13\"\nbaseline = \"ideal\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\ngpus = [2]\n"
              "tokens = [256]\nsystems = [\"ideal\"]\n");
  const Result r = sweep(file);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(slurp(file.parent_path() / "out" / "fig.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].rfind("mixtral-8x7b,2,256,ideal,ok,", 0), 0u) << rows[1];
}

TEST(SweepCli, KeepGoingRunsTheOtherPointsAndExitsNonZero) {
  const fs::path file = scratch_dir() / "two.toml";
  // Mixtral's 8 experts do not divide over 3 GPUs: that point fails, the other runs.
  write_file(file, "[sweep]\ngpus = [2, 3]\ntokens = [256]\nsystems = [\"ideal\"]\n");
  const Result stop = sweep(file);
  EXPECT_EQ(stop.status, 2) << stop.err;
  EXPECT_NE(stop.err.find("gpus=3"), std::string::npos) << stop.err;
  EXPECT_FALSE(fs::exists(file.parent_path() / "out" / "two.csv"));

  const Result go = sweep(file, {"--keep-going"});
  EXPECT_EQ(go.status, 2) << go.err;
  EXPECT_NE(go.err.find("sweep: gpus=3 tokens=256 ideal: unsupported:"), std::string::npos) << go.err;
  const auto rows = lines(slurp(file.parent_path() / "out" / "two.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].rfind("2,256,ideal,ok,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("3,256,ideal,", 0), 0u) << rows[2];
  EXPECT_NE(rows[2].find("do not divide over 3 GPUs"), std::string::npos) << rows[2];
}

TEST(SweepCli, BadSweepFilesNameFileLineAndKey) {
  const fs::path dir = scratch_dir();
  const std::string head = "[sweep]\ngpus = [2]\ntokens = [256]\nsystems = [\"ideal\"]\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {head + "colour = [1]\n", "bad.toml:5: unknown sweep key 'sweep.colour'"},
      {head + "[sweep.axes]\n\"hub.rat.entries\" = []\n", "bad.toml:6: sweep.axes.hub.rat.entries: empty"},
      {head + "[sweep.axes]\n\"hub.rat.entriez\" = [1, 2]\n", "bad.toml:6: unknown key 'hub.rat.entriez'"},
      {head + "[sweep.axes]\n\"run.gpus\" = [1, 2]\n", "bad.toml:6: sweep.axes.run.gpus: sweep 'run.gpus' with sweep.gpus"},
      {head + "[[sweep.zip]]\n\"hub.rat.entries\" = [512, 1024]\n\"hub.rat.banks\" = [8]\n",
       "bad.toml:7: sweep.zip[0]: zipped axes of different lengths ('hub.rat.entries' has 2 values, 'hub.rat.banks' has 1)"},
      {head + "[sweep.axes]\n\"hub.rat.entries\" = [0, 512]\n", "bad.toml:6"},
      {head + "[[plot]]\nname = \"p\"\nx = \"tokens\"\ny = \"layer_ms\"\n", "bad.toml:5: plot[0].y: 'layer_ms' is not a result field"},
      {head + "[[plot]]\nname = \"p\"\nx = \"colour\"\ny = \"layer_us\"\n", "plot[0].x: 'colour' is not an axis of the sweep"},
      {"[sweep]\ngpus = [2]\ntokens = [256, 512]\nsystems = [\"ideal\"]\n[[plot]]\nname = \"p\"\nx = \"gpus\"\ny = \"layer_us\"\n",
       "plot[0]: axis 'tokens' has 2 values but is not the x axis, the series or the panels"},
      {"[sweep]\ngpus = [2]\ntokens = [256]\n", "bad.toml: sweep: missing 'systems'"},
  };
  for (const auto& [text, fragment] : cases) {
    write_file(dir / "bad.toml", text);
    SCOPED_TRACE(text);
    expect_bad_input({"sweep", (dir / "bad.toml").string(), "--out", (dir / "out").string()}, fragment);
    EXPECT_FALSE(fs::exists(dir / "out" / "bad.csv"));
  }
}

}  // namespace

namespace {

// The sweep files we ship and the example in docs/figures.md stay valid.
TEST(SweepCli, ShippedSweepsAndTheDocumentedExampleValidate) {
  for (const auto& e : fs::directory_iterator(fs::path(MOEHUB_SOURCE_DIR) / "configs" / "sweeps")) {
    const Result r = moehub({"validate", e.path().string()});
    EXPECT_EQ(r.status, 0) << e.path() << ": " << r.err;
  }
  const std::string docs = slurp(fs::path(MOEHUB_SOURCE_DIR) / "docs" / "figures.md");
  const size_t zip = docs.find("[[sweep.zip]]");
  ASSERT_NE(zip, std::string::npos);
  const size_t begin = docs.rfind("```toml\n", zip) + 8, end = docs.find("```", zip);
  const fs::path file = scratch_dir() / "example.toml";
  write_file(file, docs.substr(begin, end - begin));
  const Result r = moehub({"validate", file.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  // 2 models x 1 x 1 x 2 imbalances x 2 hardware x 3 RAT sizes x 2 zipped x 3 seeds.
  EXPECT_NE(r.out.find("144 points resolved (72 in --quick)"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// [[sweep.where]]: Mixtral's 8 experts cover 2 GPUs but not 16; a where gives the 16-GPU point
// 8 redundant experts (one physical expert per GPU), so both points run.
TEST(SweepCli, AWhereGivesItsPointsTheirOwnSettings) {
  const fs::path file = scratch_dir() / "where.toml";
  write_file(file, "[sweep]\ngpus = [2, 16]\nseq_lengths = [32]\nsystems = [\"ideal\"]\n"
                   "[[sweep.where]]\ngpus = 16\nset = [\"workload.redundant_experts=8\"]\n");
  const Result r = sweep(file);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(slurp(file.parent_path() / "out" / "where.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].rfind("2,32,ideal,ok,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("16,32,ideal,ok,", 0), 0u) << rows[2];
  // A where that matches no point (no 3-GPU point) leaves the 16-GPU point without replicas.
  write_file(file, "[sweep]\ngpus = [2, 16]\nseq_lengths = [32]\nsystems = [\"ideal\"]\n"
                   "[[sweep.where]]\ngpus = 3\nset = [\"workload.redundant_experts=8\"]\n");
  const Result refused = sweep(file, {"--keep-going"});
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("gpus=16"), std::string::npos) << refused.err;
}

// The scale figure (configs/experiments/scale.toml, issue 23 item 6): 2 models x 8 GPU counts,
// and its quick subset (DeepSeek-V3 on 8 and 16 GPUs) writes a row per system, all run; its
// ninth line, deepep-ll, is DeepEP with its low-latency kernels (a [[sweep.variant]]). The runs
// go under a memory cap, which changes no output.
TEST(SweepCli, TheScaleFigureResolvesAndItsQuickSubsetWritesItsCsv) {
  const fs::path shipped = fs::path(MOEHUB_SOURCE_DIR) / "configs" / "experiments" / "scale.toml";
  const Result v = moehub({"validate", shipped.string()});
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_NE(v.out.find("16 points resolved (2 in --quick)"), std::string::npos) << v.out;
  const fs::path out = scratch_dir() / "scale";
  const Result r =
      moehub({"sweep", shipped.string(), "--quick", "--out", out.string(), "--jobs", "2", "--jobs-memory", "1GiB"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(slurp(out / "scale.csv"));
  ASSERT_EQ(rows.size(), 19u);  // header + 2 points x 9 systems
  EXPECT_EQ(rows[0].rfind("model,gpus,seq_length,imbalance,hardware,system,status,layer_us,", 0), 0u) << rows[0];
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_NE(rows[i].find(",ok,"), std::string::npos) << rows[i];
  EXPECT_EQ(rows[1].rfind("deepseek-v3,8,16,0,h800-cluster,megatron-te,ok,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[4].rfind("deepseek-v3,8,16,0,h800-cluster,deepep,ok,", 0), 0u) << rows[4];
  EXPECT_EQ(rows[9].rfind("deepseek-v3,8,16,0,h800-cluster,deepep-ll,ok,", 0), 0u) << rows[9];
  EXPECT_NE(cells(rows[9])[7], cells(rows[4])[7]) << "the variant ran DeepEP's other kernels";
  EXPECT_TRUE(fs::exists(out / "scale-speedup.svg"));
  const Result bad = moehub({"sweep", shipped.string(), "--quick", "--out", out.string(), "--jobs-memory", "lots"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err.rfind("moehub: error: --jobs-memory: 'lots': ", 0), 0u) << bad.err;
}

}  // namespace
