// `moehub accuracy`: runs each point's command line, reads its metric, and reports the error;
// bad point files are one-line errors.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

// A folder holding one point file with `text`.
std::string points_dir(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = scratch_dir() / ("accuracy_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "points.toml") << text;
  return dir.string();
}

const char* kPoint = R"([[point]]
id = "gemm"
category = "gemm"
hardware = "H800"
setup = "one GEMM"
measured = "throughput"
value = 500.0
unit = "TFLOPS"
source = "a test"
url = "https://example.org/a/b/c"
args = ["bench", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--format", "json"]
metric = "/tflops"
)";

TEST(CliAccuracy, ComparesAPointWithItsOwnRun) {
  const std::string dir = points_dir("ok", std::string(kPoint) + R"(
[[point]]
id = "later"
category = "layer"
hardware = "H800"
setup = "not modelled"
measured = "latency"
value = 1.0
unit = "ms"
source = "another test"
url = "https://example.org/x/y"
unsupported = "not modelled yet"
)");
  const moehub_test::Result r = moehub_test::moehub({"accuracy", "--points", dir, "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const moehub_test::Result direct = moehub_test::moehub({"bench", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--format", "json"});
  const double tflops = nlohmann::json::parse(direct.out)["tflops"].get<double>();
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["simulated"].get<double>(), tflops);
  EXPECT_DOUBLE_EQ(j["points"][0]["error"].get<double>(), (tflops - 500.0) / 500.0);
  EXPECT_EQ(j["points"][0]["group"], "example.org/a/b");
  EXPECT_EQ(j["points"][1]["status"], "unsupported");
  EXPECT_EQ(j["compared"], 1);
  EXPECT_DOUBLE_EQ(j["mean_abs_error"]["all"].get<double>(), std::abs(tflops - 500.0) / 500.0);
}

TEST(CliAccuracy, BadPointFilesAreOneLineErrors) {
  const auto expect_error = [](const std::string& name, const std::string& text, const std::string& message) {
    const moehub_test::Result r = moehub_test::moehub({"accuracy", "--points", points_dir(name, text)});
    EXPECT_EQ(r.status, 2) << name << ": " << r.err;
    EXPECT_EQ(r.out, "") << name;
    EXPECT_NE(r.err.find(message), std::string::npos) << name << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << name << ": " << r.err;
  };
  expect_error("unknown", std::string(kPoint) + "colour = \"red\"\n", "points.toml: point 1: unknown key 'colour'");
  std::string neither = kPoint;
  neither.replace(neither.find("args"), neither.size(), "\n");
  expect_error("neither", neither, "give either 'args' and 'metric'");
  expect_error("twice", std::string(kPoint) + "\n" + kPoint, "point gemm: the id is used twice");
  std::string pointer = kPoint;
  pointer.replace(pointer.find("\"/tflops\""), 9, "\"/nothing\"");
  expect_error("pointer", pointer, "metric '/nothing' is not a number");
  std::string failing = kPoint;
  failing.replace(failing.find("\"4096\", \"--n\""), 6, "\"-1\"");
  expect_error("failing", failing, "point gemm: its run failed: ");
}

// Points run `--jobs` at a time: the output is the same, and the error is the first failing point's.
TEST(CliAccuracy, JobsChangeNeitherTheOutputNorTheErrorReported) {
  const auto renamed = [](std::string text, const std::string& id, bool failing) {
    text.replace(text.find("\"gemm\""), 6, "\"" + id + "\"");
    if (failing) text.replace(text.find("\"4096\", \"--n\""), 6, "\"-1\"");
    return text;
  };
  const std::string good = points_dir("jobs", std::string(kPoint) + renamed(kPoint, "second", false) + renamed(kPoint, "third", false));
  const moehub_test::Result one = moehub_test::moehub({"accuracy", "--points", good, "--jobs", "1", "--format", "json"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(moehub_test::moehub({"accuracy", "--points", good, "--jobs", "3", "--format", "json"}).out, one.out);
  const std::string bad = points_dir("jobs_bad", std::string(kPoint) + renamed(kPoint, "second", true) + renamed(kPoint, "third", true));
  const moehub_test::Result r = moehub_test::moehub({"accuracy", "--points", bad, "--jobs", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("point second: its run failed: "), std::string::npos) << r.err;
  const moehub_test::Result zero = moehub_test::moehub({"accuracy", "--points", good, "--jobs", "0"});
  EXPECT_EQ(zero.status, 2);
  EXPECT_EQ(zero.err, "moehub: error: --jobs: expected a positive number of jobs, got 0\n");
}

}  // namespace

namespace {

// docs/ACCURACY.md is what the command prints: a model change that moves a point must
// regenerate it (`build/moehub accuracy --format md > docs/ACCURACY.md`).
TEST(CliAccuracy, DocsAccuracyIsTheCommandsOutput) {
  const moehub_test::Result r = moehub_test::moehub({"accuracy", "--format", "md"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, moehub_test::slurp(std::filesystem::path(MOEHUB_SOURCE_DIR) / "docs" / "ACCURACY.md"));
}

}  // namespace
