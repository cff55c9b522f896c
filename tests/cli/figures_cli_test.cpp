// End-to-end tests of `moehub figures` through the program, on a tiny experiments folder:
// CSV columns and labels, images, the headline table and RESULTS.md, the code count, the
// run cache, and bad input. Uses only the `ideal` system plus an unregistered name.

#include <gtest/gtest.h>

#include "cli/cli_support.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using moehub_test::lines;
using moehub_test::Result;
using moehub_test::slurp;
void write(const fs::path& p, const std::string& text) { moehub_test::write_file(p, text); }

constexpr const char* kTinyFigure = R"(description = "two points of the Fig. 13 kind"
[figure]
kind = "fig13"
title = "tiny"
baseline = "ideal"

[sweep]
models = ["mixtral-8x7b"]
gpus = [2]
tokens = [256, 512]
systems = ["ideal"]
set = ["run.seed=3"]

[sweep.quick]
tokens = [256]
)";

constexpr const char* kTinyTable = R"(description = "headlines over the tiny figure"
[figure]
kind = "table"
title = "tiny table"

[[headline]]
name = "ideal over itself"
section = "test"
paper = 1.0
figure = "tiny"
field = "layer_us"
pairs = [["ideal", "ideal"]]
explanation = ""

[[headline]]
name = "ideal over itself against a far value"
section = "test"
paper = 2.0
figure = "tiny"
field = "layer_us"
pairs = [["ideal", "ideal"]]
explanation = "written by a person"

[[headline]]
name = "needs an unregistered system"
section = "test"
paper = 1.5
figure = "tiny"
field = "layer_us"
pairs = [["no-such-system", "ideal"]]

[[table_i]]
system = "no-such-system"
scheduling = "1 / 2"
communication = "3 / 4"
)";

// A fake systems folder: ideal/ideal.cpp with 3 lines of code among comments and blank lines.
constexpr const char* kFakeIdeal = "// comment\n\nint a = 1;  // trailing\n/* block\n still block */\n"
                                   "const char* s = \"// not a comment\";\n  /* x */ int b;\n";

class FiguresCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("moehub-figures-{}-{}", ::getpid(), info->name());
    fs::remove_all(dir_);
    write(dir_ / "exp" / "tiny.toml", kTinyFigure);
    write(dir_ / "exp" / "tinytable.toml", kTinyTable);
    write(dir_ / "exp" / "area.toml", "[figure]\nkind = \"area\"\ntitle = \"area\"\n");
    write(dir_ / "exp" / "not-a-figure.toml", "[run]\ntokens = 64\n");
    write(dir_ / "src" / "ideal" / "ideal.cpp", kFakeIdeal);
    write(dir_ / "src" / "ideal" / "hub_wiring.cpp", kFakeIdeal);  // not the system's own code: not counted
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result moehub(const std::vector<std::string>& args) {
    std::string cmd = std::string("'") + MOEHUB_BINARY + "' --config-dir '" + MOEHUB_SOURCE_DIR + "/configs'";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += fmt::format(" >'{}' 2>'{}' </dev/null", (dir_ / "stdout").string(), (dir_ / "stderr").string());
    Result r;
    const int raw = std::system(cmd.c_str());
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }
  Result figures(std::vector<std::string> extra) {
    std::vector<std::string> args{"figures", "--out", (dir_ / "out").string(), "--experiments",
                                  (dir_ / "exp").string(), "--source-dir", (dir_ / "src").string()};
    if (std::find(extra.begin(), extra.end(), "--jobs") == extra.end()) extra.insert(extra.begin(), {"--jobs", "2"});
    args.insert(args.end(), extra.begin(), extra.end());
    return moehub(args);
  }
  void expect_bad_input(const std::vector<std::string>& extra, const std::string& fragment) {
    const Result r = figures(extra);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err.rfind("moehub: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err << "\nexpected: " << fragment;
    EXPECT_FALSE(fs::exists(dir_ / "out" / "tiny.csv"));
  }

  fs::path dir_;
};

TEST_F(FiguresCli, QuickWritesCsvImagesTableAndResults) {
  const Result r = figures({"--quick"});
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path out = dir_ / "out";
  const auto csv = lines(slurp(out / "tiny.csv"));
  ASSERT_EQ(csv.size(), 2u) << slurp(out / "tiny.csv");  // header + 1 quick point x 1 system
  EXPECT_EQ(csv[0], "model,gpus,seq_length,tokens,imbalance_std,system,status,layer_us,e2e_ms,"
                    "routing_to_gemm1_us,speedup_over_ideal");
  EXPECT_EQ(csv[1].rfind("mixtral-8x7b,2,,256,0,ideal,ok,", 0), 0u) << csv[1];
  EXPECT_EQ(csv[1].substr(csv[1].rfind(',') + 1), "1");  // ideal over itself
  for (const char* f : {"tiny.svg", "tiny.png", "tinytable.svg", "tinytable.png", "area.svg", "area.png"}) {
    EXPECT_GT(fs::file_size(out / f), 1000u) << f;
  }
  EXPECT_EQ(slurp(out / "tiny.png").substr(1, 3), "PNG");

  const auto table = lines(slurp(out / "tinytable.csv"));
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[1], "1,ideal over itself,test,tiny,layer_us,ideal/ideal,1,1,1,0.0,no,");
  EXPECT_EQ(table[2], "2,ideal over itself against a far value,test,tiny,layer_us,ideal/ideal,2,1,1,-50.0,yes,"
                      "written by a person");
  EXPECT_EQ(table[3], "3,needs an unregistered system,test,tiny,layer_us,no-such-system/ideal,1.5,,0,,,");
  const auto loc = lines(slurp(out / "tinytable_loc.csv"));
  // One row per registered system plus the unregistered one the table names.
  ASSERT_GE(loc.size(), 3u);
  EXPECT_NE(std::find(loc.begin(), loc.end(), "ideal,ideal.cpp,3,,"), loc.end());
  EXPECT_EQ(loc.back(), "no-such-system,not implemented,,1 / 2,3 / 4");
  EXPECT_NE(slurp(out / "area.csv").find("rat.tags,sram-dual-port,4096,39,"), std::string::npos);

  const std::string md = slurp(out / "RESULTS.md");
  EXPECT_NE(md.find("| 2 | ideal over itself against a far value | 2.000 | 1.000 | -50.0 % | written by a person |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| 1 | ideal over itself | 1.000 | 1.000 |"), std::string::npos) << "within tolerance";
  EXPECT_NE(md.find("Not computed (their systems are not implemented or did not run): 3."), std::string::npos);
  EXPECT_NE(md.find("![tiny](tiny.svg)"), std::string::npos);
}

TEST_F(FiguresCli, RerunUsesTheCacheAndTheFullSweepComputesOnlyNewPoints) {
  ASSERT_EQ(figures({"--quick", "tiny"}).status, 0);
  const std::string first = slurp(dir_ / "out" / "tiny.csv");
  const Result again = figures({"--quick", "tiny"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("0 runs computed, 1 cached, 0 unsupported, 0 failed"), std::string::npos) << again.err;
  EXPECT_EQ(slurp(dir_ / "out" / "tiny.csv"), first);
  const Result full = figures({"tiny"});
  ASSERT_EQ(full.status, 0) << full.err;
  EXPECT_NE(full.err.find("1 runs computed, 1 cached, 0 unsupported, 0 failed"), std::string::npos) << full.err;
  EXPECT_EQ(lines(slurp(dir_ / "out" / "tiny.csv")).size(), 3u);  // header + 2 points x 1 system
  // A changed parameter is a different configuration: computed again.
  std::string changed = kTinyFigure;
  changed.replace(changed.find("run.seed=3"), 10, "run.seed=4");
  write(dir_ / "exp" / "tiny.toml", changed);
  const Result reseeded = figures({"--quick", "tiny"});
  EXPECT_NE(reseeded.err.find("1 runs computed, 0 cached"), std::string::npos) << reseeded.err;
}

TEST_F(FiguresCli, TableBringsTheFiguresItReads) {
  const Result r = figures({"--quick", "tinytable"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "tiny.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "area.csv"));
}

// Fig. 3's CSV: the gap to the ideal layer is the scheduling overhead (shuffles, syncs, launches,
// polling beyond ideal's), the exposed communication and what remains, row by row.
TEST_F(FiguresCli, GapToIdealAddsUpFromTheBreakdown) {
  write(dir_ / "exp" / "gap.toml", "[figure]\nkind = \"fig3\"\ntitle = \"gap\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\n"
                                   "gpus = [2]\ntokens = [128]\nsystems = [\"megatron-te\", \"ideal\"]\n");
  const Result r = figures({"gap"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream csv(slurp(dir_ / "out" / "gap.csv"));
  std::string line;
  std::getline(csv, line);
  const auto split = [](const std::string& l) {
    std::vector<std::string> v;
    std::stringstream ss(l);
    for (std::string c; std::getline(ss, c, ',');) v.push_back(c);
    return v;
  };
  const std::vector<std::string> header = split(line);
  const auto col = [&header](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  ASSERT_LT(col("overhead_share_of_layer"), header.size()) << line;
  int rows = 0;
  while (std::getline(csv, line)) {
    const std::vector<std::string> c = split(line);
    const double layer = std::stod(c[col("layer_us")]), gap = std::stod(c[col("gap_to_ideal_us")]);
    const double sched = std::stod(c[col("scheduling_overhead_us")]), comm = std::stod(c[col("exposed_communication_us")]);
    EXPECT_NEAR(gap, sched + comm + std::stod(c[col("other_gap_us")]), 1e-3) << line;
    EXPECT_NEAR(std::stod(c[col("overhead_share_of_layer")]), (sched + comm) / layer, 1e-4) << line;
    if (c[col("system")] == "ideal") {
      EXPECT_EQ(gap, 0.0);
    }
    if (c[col("system")] == "megatron-te") {
      EXPECT_GT(sched, 0.0) << "its syncs and permutes are overhead";
    }
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "gap.svg"));
}

// A sweep file in the experiments folder is a figure of kind "sweep": the tidy CSV of `moehub
// sweep` (one row per point and system), its [[plot]]s, a RESULTS.md section with the values
// drawn, and the run cache.
TEST_F(FiguresCli, SweepFileIsAFigureOfItsOwn) {
  write(dir_ / "exp" / "tp.toml", "description = \"ideal under TP\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\n"
                                  "gpus = [2]\ntokens = [64]\nimbalance = [0.004]\nsystems = [\"ideal\"]\n[sweep.axes]\n"
                                  "\"parallel.tp\" = [1, 2]\n[sweep.quick.axes]\n\"parallel.tp\" = [2]\n"
                                  "[[plot]]\nname = \"layer\"\nkind = \"bar\"\nx = \"parallel.tp\"\ny = \"layer_us\"\n"
                                  "title = \"Full sweep\"\nquick_title = \"Quick subset\"\n");
  const Result quick = figures({"--quick", "tp"});
  ASSERT_EQ(quick.status, 0) << quick.err;
  const fs::path out = dir_ / "out";
  auto csv = lines(slurp(out / "tp.csv"));
  ASSERT_EQ(csv.size(), 2u) << slurp(out / "tp.csv");  // header + 1 quick point x 1 system
  EXPECT_EQ(csv[0].rfind("model,gpus,tokens,imbalance,parallel.tp,system,status,layer_us,", 0), 0u) << csv[0];
  // The CSV keeps the run's setting as written (17 digits); RESULTS.md shows the shortest form.
  EXPECT_EQ(csv[1].rfind("mixtral-8x7b,2,64,0.0040000000000000001,2,ideal,ok,", 0), 0u) << csv[1];
  const std::string quick_md = slurp(out / "RESULTS.md");
  EXPECT_NE(quick_md.find("`tp-layer`: Quick subset. "), std::string::npos) << quick_md;
  EXPECT_EQ(quick_md.find("Full sweep"), std::string::npos) << quick_md;
  EXPECT_GT(fs::file_size(out / "tp-layer.svg"), 1000u);
  EXPECT_FALSE(fs::exists(out / "tp.svg")) << "a sweep file draws its own plots only";

  const Result full = figures({"tp"});
  ASSERT_EQ(full.status, 0) << full.err;
  EXPECT_NE(full.err.find("1 runs computed, 1 cached, 0 unsupported, 0 failed"), std::string::npos) << full.err;
  csv = lines(slurp(out / "tp.csv"));
  ASSERT_EQ(csv.size(), 3u);  // header + 2 points x 1 system
  EXPECT_EQ(csv[1].rfind("mixtral-8x7b,2,64,0.0040000000000000001,1,ideal,ok,", 0), 0u) << csv[1];
  // RESULTS.md: the section with the plot's values as drawn, the CSV's layer_us, and the image.
  const auto layer_us = [](const std::string& row) {
    std::vector<std::string> c;
    std::stringstream ss(row);
    for (std::string x; std::getline(ss, x, ',');) c.push_back(x);
    return c.at(7);
  };
  const std::string md = slurp(out / "RESULTS.md");
  EXPECT_NE(md.find("## ideal under TP (tp)"), std::string::npos) << md;
  EXPECT_NE(md.find("Points run: model = mixtral-8x7b; gpus = 2; tokens = 64; imbalance = 0.004; parallel.tp in 1, 2.\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("`tp-layer`: Full sweep. "), std::string::npos) << md;
  EXPECT_NE(md.find("layer_us (us) against parallel.tp, clustered bars for ideal."), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | " + layer_us(csv[1]) + " |\n| 2 | " + layer_us(csv[2]) + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("![tp-layer](tp-layer.svg)"), std::string::npos) << md;
  // A figure file may not claim the kind.
  write(dir_ / "exp" / "tp.toml", "[figure]\nkind = \"sweep\"\n");
  expect_bad_input({"tp"}, "tp.toml:2: figure.kind: 'sweep' is a sweep file's kind");
}

TEST_F(FiguresCli, BadInput) {
  expect_bad_input({"nope"}, "figures: unknown figure 'nope' (known: tiny, tinytable, area)");
  expect_bad_input({"--jobs", "0"}, "--jobs: expected a positive number of jobs, got 0");
  expect_bad_input({"--jobs", "many"}, "--jobs");
  write(dir_ / "exp" / "tiny.toml", std::string(kTinyFigure) + "\n[sweep.extra]\n");
  expect_bad_input({}, "tiny.toml:");
  std::string three = kTinyFigure;
  three.replace(three.find("gpus = [2]"), 10, "gpus = [3]");
  write(dir_ / "exp" / "tiny.toml", three);
  expect_bad_input({"--quick"}, "tiny.toml: sweep (mixtral-8x7b 3 GPUs 256 tokens): model.experts: 8 experts do not "
                                "divide over 3 GPUs");
  // A sweep over a system that does not exist is an error, not an empty row (issue 22).
  std::string unknown = kTinyFigure;
  unknown.replace(unknown.find("systems = [\"ideal\"]"), 19, "systems = [\"ideal\", \"no-such-system\"]");
  write(dir_ / "exp" / "tiny.toml", unknown);
  expect_bad_input({"--quick"}, "tiny.toml: sweep.systems: unknown system 'no-such-system' (known: ideal,");
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "a failed start removes the folders it created";
  // A headline names a typed result field; a misspelt one is refused up front with the list.
  write(dir_ / "exp" / "tiny.toml", kTinyFigure);
  std::string misspelt = kTinyTable;
  misspelt.replace(misspelt.find("field = \"layer_us\""), 18, "field = \"layer_ms\"");
  write(dir_ / "exp" / "tinytable.toml", misspelt);
  expect_bad_input({"--quick", "tinytable"}, "tinytable.toml: headline[0].field: 'layer_ms' is not a result field "
                                             "(layer_us, e2e_ms, routing_to_gemm1_us,");
}

TEST_F(FiguresCli, ValidateChecksFigureFiles) {
  Result r = moehub({"validate", (dir_ / "exp" / "tiny.toml").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("2 points resolved (1 in --quick))"), std::string::npos)
      << r.out;
  write(dir_ / "exp" / "bad.toml", "[figure]\nkind = \"fig13\"\n[sweep]\nmodels = [\"nope\"]\ngpus = [2]\n"
                                   "tokens = [64]\nsystems = [\"ideal\"]\n");
  r = moehub({"validate", (dir_ / "exp" / "bad.toml").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.toml:4: sweep.models: unknown models preset 'nope'"), std::string::npos) << r.err;
  r = moehub({"figures", "--out", (dir_ / "out").string(), "--experiments", (dir_ / "exp").string(), "bad"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.toml:4: sweep.models: unknown models preset 'nope'"), std::string::npos) << r.err;
  write(dir_ / "exp" / "bad.toml", "[figure]\nkind = \"fig13\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\ngpus = [2]\n"
                                   "tokens = [64]\nsystems = [\"ideal\"]\n[sweep.quick]\ngpus = [3]\n");
  r = moehub({"validate", (dir_ / "exp" / "bad.toml").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.toml: sweep (mixtral-8x7b 3 GPUs 64 tokens): model.experts"), std::string::npos) << r.err;
  write(dir_ / "exp" / "bad.toml", "[figure]\nkind = \"fig13\"\n[run]\ntokens = 64\n");
  r = moehub({"validate", (dir_ / "exp" / "bad.toml").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("bad.toml:3: 'run': a figure file holds only"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(fs::path(MOEHUB_SOURCE_DIR) / "configs" / "experiments")) {
    r = moehub({"validate", e.path().string()});
    EXPECT_EQ(r.status, 0) << e.path() << ": " << r.err;
  }
}

}  // namespace

namespace {

// With a seeds axis a figure's values are the means over the seeds, and its lines carry the
// seeds' min-max as error bars.
TEST(FiguresSeeds, ValuesAreMeansOverSeedsWithErrorBars) {
  const fs::path dir = moehub_test::scratch_dir();
  write(dir / "exp" / "t.toml", "[figure]\nkind = \"fig14\"\nbaseline = \"ideal\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\n"
                                "gpus = [2]\ntokens = [256]\nimbalance = [0.03]\nseeds = [1, 2]\nsystems = [\"ideal\"]\n");
  Result r = moehub_test::moehub({"figures", "--experiments", (dir / "exp").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines(slurp(dir / "out" / "t.csv"));
  ASSERT_EQ(rows.size(), 2u);  // one point: the seeds are folded into it
  double seed[2];
  for (int s = 0; s < 2; ++s) {
    r = moehub_test::moehub({"run", "--gpus", "2", "--tokens", "256", "--imbalance", "0.03", "--seed",
                             std::to_string(s + 1), "--systems", "ideal", "--format", "csv"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto csv = lines(r.out);
    ASSERT_GE(csv.size(), 2u);
    const auto header = csv[0], row = csv[1];
    const size_t col = std::count(header.begin(), header.begin() + header.find("layer_us"), ',');
    std::istringstream in(row);
    std::string cell;
    for (size_t i = 0; i <= col; ++i) std::getline(in, cell, ',');
    seed[s] = std::stod(cell);
  }
  EXPECT_NE(seed[0], seed[1]);
  const std::string header = rows[0];
  const size_t col = std::count(header.begin(), header.begin() + header.find("layer_us"), ',');
  std::istringstream in(rows[1]);
  std::string cell;
  for (size_t i = 0; i <= col; ++i) std::getline(in, cell, ',');
  EXPECT_NEAR(std::stod(cell), (seed[0] + seed[1]) / 2, 1e-3);
  EXPECT_NE(slurp(dir / "out" / "gnuplot" / "t.gp").find("yerrorlines"), std::string::npos);
}

}  // namespace
