// End-to-end tests through the `moehub` program: exit codes, messages, outputs, determinism.

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
#include <vector>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

namespace fs = std::filesystem;

// Result, slurp, scratch_dir, moehub and expect_bad_input come from cli_support.h.


TEST(CliRun, DefaultJsonHasTheContractSections) {
  const Result r = moehub({"run", "--format", "json", "--systems", "ideal"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["run"]["gpus"], 8);
  EXPECT_EQ(j["config"]["run"]["tokens"], 8192);
  EXPECT_EQ(j["config"]["run"]["model"], "mixtral-8x7b");
  EXPECT_EQ(j["config"]["model"]["hidden"], 4096);
  EXPECT_EQ(j["config"]["net"]["gpu_switch_latency"], "250ns");
  EXPECT_TRUE(j["results"].is_array());
  EXPECT_TRUE(j["perf"].contains("wall_s"));
  EXPECT_TRUE(j["perf"].contains("cpu_s"));
  EXPECT_EQ(j["perf"]["threads"], 1);  // one system: one thread
  // The simulation cost per system, each entry matching its system's event count.
  ASSERT_EQ(j["perf"]["systems"].size(), 1u);
  EXPECT_EQ(j["perf"]["systems"][0]["system"], "ideal");
  EXPECT_EQ(j["perf"]["systems"][0]["events"], j["results"][0]["events"]);
  EXPECT_EQ(j["perf"]["events"], j["results"][0]["events"]);
  EXPECT_GE(j["perf"]["systems"][0]["wall_s"].get<double>(), 0.0);
}

TEST(CliRun, FlagsAndSetReachTheResolvedConfig) {
  const Result r = moehub({"run", "--format", "json", "--model", "phi-3.5-moe", "--gpus", "16", "--tokens", "4096", "--systems", "ideal", "--imbalance", "0.032",
                           "--seed", "9", "--set", "gpu.sm_count=114", "--set", "net.gpu_switch_latency=0.3us"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["run"]["gpus"], 16);
  EXPECT_EQ(j["config"]["run"]["tokens"], 4096);
  EXPECT_EQ(j["config"]["run"]["seed"], 9);
  EXPECT_DOUBLE_EQ(j["config"]["workload"]["imbalance_std"].get<double>(), 0.032);
  EXPECT_EQ(j["config"]["gpu"]["sm_count"], 114);
  EXPECT_EQ(j["config"]["net"]["gpu_switch_latency"], "300ns");
}

TEST(CliRun, SameInputsGiveIdenticalOutputApartFromPerf) {
  // Every system, at a small size so that the suite stays fast.
  const std::vector<std::string> args{"run", "--format", "json", "--seed", "3", "--tokens", "512"};
  auto a = nlohmann::json::parse(moehub(args).out);
  auto b = nlohmann::json::parse(moehub(args).out);
  a.erase("perf");
  b.erase("perf");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(CliRun, TableAndCsvFormats) {
  const Result table = moehub({"run", "--tokens", "512", "--systems", "ideal,megatron-te"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("mixtral-8x7b"), std::string::npos);
  EXPECT_NE(table.out.find("\nmegatron-te "), std::string::npos);
  // The footer says what the simulation cost on this host.
  EXPECT_NE(table.out.find(" s of CPU, "), std::string::npos) << table.out;
  const Result csv = moehub({"run", "--format", "csv", "--tokens", "512", "--systems", "ideal,megatron-te"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  // A header and one row per system, nothing else (the host's timing stays out of the data).
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3) << csv.out;
  EXPECT_EQ(csv.out.rfind("system,", 0), 0u) << csv.out;
  EXPECT_EQ(csv.out.find("of CPU"), std::string::npos);
}

// The default table keeps the headline columns within a 120-column terminal (the longest
// system and breakdown names included); `--format wide` has every column.
TEST(CliRun, DefaultTableFitsATerminalAndWideHasEveryColumn) {
  const std::vector<std::string> args = {"run", "--tokens", "512", "--systems", "ideal,megatron-te,deepep,fastermoe,mh-base"};
  const Result table = moehub(args);
  ASSERT_EQ(table.status, 0) << table.err;
  std::istringstream lines(table.out);
  std::string line, header;
  while (std::getline(lines, line)) {
    if (line.rfind("system ", 0) == 0) header = line;
    if (line.rfind("of_ideal:", 0) == 0 || line.rfind("simulated ", 0) == 0) continue;  // prose lines
    EXPECT_LE(line.size(), 120u) << line;
  }
  for (const char* col : {"layer_us", "e2e_ms", "moehub_speedup", "of_ideal", "largest_us", "second_us"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col << " missing from: " << header;
  }
  EXPECT_NE(table.out.find("expert_compute "), std::string::npos) << table.out;
  std::vector<std::string> wide_args = args;
  wide_args.insert(wide_args.end(), {"--format", "wide"});
  const Result wide = moehub(wide_args);
  ASSERT_EQ(wide.status, 0) << wide.err;
  for (const char* col : {"breakdown_us.expert_compute", "breakdown_us.polling", "dispatch_GBps", "routing_to_gemm1_us"}) {
    EXPECT_NE(wide.out.find(col), std::string::npos) << col;
  }
}

TEST(CliRun, OutputAndTraceFilesAppearOnSuccess) {
  const fs::path dir = scratch_dir();
  const Result r = moehub({"run", "--format", "json", "--tokens", "512", "--systems", "ideal,megatron-te", "--output", (dir / "out.json").string(), "--trace",
                           (dir / "trace.json").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  nlohmann::json out;
  EXPECT_NO_THROW(out = nlohmann::json::parse(slurp(dir / "out.json")));
  EXPECT_TRUE(out["results"].is_array());
  const auto trace = nlohmann::json::parse(slurp(dir / "trace.json"));
  EXPECT_TRUE(trace["traceEvents"].is_array());
}

TEST(CliRun, ExperimentFileOverridesPresets) {
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "exp.toml") << "description = \"test\"\n[run]\ngpus = 4\n[model]\ntop_k = 1\n";
  const Result r = moehub({"run", "--format", "json", "--systems", "ideal", "--config", (dir / "exp.toml").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["run"]["gpus"], 4);
  EXPECT_EQ(j["config"]["model"]["top_k"], 1);
}

// ---- bad inputs: exit 2, one line naming the key, flag or file ----

TEST(CliBadInput, ZeroGpus) { expect_bad_input({"run", "--gpus", "0"}, "run.gpus: must be at least 1"); }
TEST(CliBadInput, NonNumericGpus) { expect_bad_input({"run", "--gpus", "eight"}, "run.gpus: expected an integer"); }
TEST(CliBadInput, FractionalTokens) { expect_bad_input({"run", "--tokens", "1.5"}, "run.tokens: expected an integer"); }
TEST(CliBadInput, ImbalanceOutOfRange) { expect_bad_input({"run", "--imbalance", "2"}, "workload.imbalance_std: must be at most 1"); }
TEST(CliBadInput, UnknownModel) { expect_bad_input({"run", "--model", "gpt-17"}, "run.model: unknown models preset 'gpt-17'"); }
TEST(CliBadInput, ZeroTimeLimit) { expect_bad_input({"run", "--set", "run.time_limit=0ns"}, "run.time_limit: must be"); }
TEST(CliBadInput, MissingHardwareFile) { expect_bad_input({"run", "--hardware", "no/such.toml"}, "no such file"); }
TEST(CliBadInput, UnknownSetKey) { expect_bad_input({"run", "--set", "gpu.warp_drive=1"}, "unknown key 'gpu.warp_drive'"); }
TEST(CliBadInput, SetWithoutValue) { expect_bad_input({"run", "--set", "gpu.sm_count"}, "--set: expected KEY=VALUE"); }
TEST(CliBadInput, ZeroSms) { expect_bad_input({"run", "--set", "gpu.sm_count=0"}, "gpu.sm_count: must be at least 1"); }
TEST(CliBadInput, ZeroBandwidth) { expect_bad_input({"run", "--set", "net.link_bandwidth=0GB/s"}, "net.link_bandwidth: must be greater than 0"); }
TEST(CliBadInput, LatencyWithoutUnit) { expect_bad_input({"run", "--set", "net.gpu_switch_latency=250"}, "net.gpu_switch_latency: missing unit"); }
TEST(CliBadInput, UnknownFormat) { expect_bad_input({"run", "--format", "xml"}, "--format"); }
TEST(CliBadInput, UnknownFlag) { expect_bad_input({"run", "--warp", "9"}, "--warp"); }
TEST(CliBadInput, UnknownSystem) { expect_bad_input({"run", "--systems", "warp-drive"}, "run.systems: unknown"); }
TEST(CliBadInput, NoSubcommand) { expect_bad_input({}, "subcommand"); }

TEST(CliBadInput, ConfigFileWithUnknownKeyNamesItsLine) {
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "bad.toml") << "[model]\nhidden = 4096\nhiden = 3\n";
  expect_bad_input({"run", "--config", (dir / "bad.toml").string()}, "model.hiden: unknown key (" + (dir / "bad.toml").string() + ":3)");
}

TEST(CliBadInput, ConfigFileWithOutOfRangeValue) {
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "bad.toml") << "[model]\nhidden = -5\n";
  expect_bad_input({"run", "--config", (dir / "bad.toml").string()}, "model.hidden: must be at least 1");
}

TEST(CliBadInput, MalformedTomlNamesFileAndLine) {
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "broken.toml") << "[gpu]\nsm_count = = 1\n";
  expect_bad_input({"validate", (dir / "broken.toml").string()}, (dir / "broken.toml").string() + ":2");
}

// Writes that fail (a full device) are errors naming what was written, and a device target is
// written, never replaced by a renamed temporary.
TEST(CliBadInput, WritesToAFullDeviceFail) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::vector<std::string> small = {"run", "--tokens", "64", "--systems", "ideal"};
  std::vector<std::string> out = small, trace = small;
  out.insert(out.end(), {"-o", "/dev/full"});
  trace.insert(trace.end(), {"--trace", "/dev/full"});
  expect_bad_input(out, "--output: writing '/dev/full' failed");
  expect_bad_input(trace, "--trace: writing '/dev/full' failed");
  EXPECT_FALSE(fs::is_regular_file("/dev/full"));
  std::string cmd = std::string("'") + MOEHUB_BINARY + "' run --tokens 64 --systems ideal >/dev/full 2>/dev/null";
  const int raw = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, 2);
}

TEST(CliRun, OutputToADeviceIsWrittenThere) {
  const Result r = moehub({"run", "--tokens", "64", "--systems", "ideal", "-o", "/dev/null"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::is_regular_file("/dev/null"));
}

// Expected stops are the user's (exit 2, one line naming the parameter), not internal errors.
TEST(CliBadInput, TimeLimitReachedNamesTheLimitTheSystemAndTheTime) {
  expect_bad_input({"run", "--tokens", "1024", "--systems", "ideal", "--set", "run.time_limit=150us"},
                   "run.time_limit: system ideal was still running after run.time_limit = 150 us");
}
TEST(CliBadInput, FunctionalWithAFullSizeModelIsRefusedBeforeSimulating) {
  expect_bad_input({"run", "--functional", "--systems", "ideal"}, "run.functional: the float32 reference layer");
}

// A count that fills a 32-bit hardware field is refused when it does not fit, not wrapped:
// the field's type bounds the parameter.
TEST(CliBadInput, IntegerBeyondItsThirtyTwoBitFieldIsNamed) {
  expect_bad_input({"area", "--set", "hub.rat.entries=9223372036854775807"},
                   "hub.rat.entries: must be at most 4294967295, got 9223372036854775807");
}

TEST(CliBadInput, BadOutputPathLeavesNothingBehind) {
  const fs::path dir = scratch_dir();
  expect_bad_input({"run", "--trace", (dir / "nodir" / "t.json").string()}, "--trace: cannot write");
  EXPECT_FALSE(fs::exists(dir / "nodir"));
}

TEST(CliBadInput, FailedRunLeavesNoPartialOutput) {
  const fs::path dir = scratch_dir();
  expect_bad_input({"run", "--output", (dir / "out.json").string(), "--systems", "bogus"}, "run.systems");
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find("out.json"), std::string::npos) << e.path();
  }
}

// ---- list and validate ----

// Every parameter, given values that are wrong for most of them: the run either succeeds or
// exits 2 with one line naming where the problem is, and leaves no output file behind. A crash,
// an uncaught internal error or a second line fails it.
TEST(CliBadInput, EveryParameterAnswersBadValuesWithOneLineOrRuns) {
  const Result list = moehub({"list", "--format", "json"});
  ASSERT_EQ(list.status, 0) << list.err;
  const auto params = nlohmann::json::parse(list.out)["parameters"];
  ASSERT_GT(params.size(), 100u);
  const fs::path out = scratch_dir() / "sweep.json";
  int refused = 0;
  for (const auto& p : params) {
    const std::string key = p["key"].get<std::string>();
    for (const std::string value : {"-1", "0", "abc", "", "1e30", "99999999999999999999"}) {
      fs::remove(out);
      const Result r = moehub({"run", "--tokens", "64", "--systems", "ideal,megatron-te,moehub", "--set", key + "=" + value, "--format", "json",
                               "--output", out.string()});
      const std::string where = key + "=" + value;
      if (r.status == 0) {
        EXPECT_TRUE(fs::exists(out)) << where;
        continue;
      }
      ++refused;
      EXPECT_EQ(r.status, 2) << where << ": " << r.err;
      EXPECT_EQ(r.err.rfind("moehub: error: ", 0), 0u) << where << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << where << ": " << r.err;
      EXPECT_FALSE(fs::exists(out)) << where << " left a partial output";
    }
  }
  EXPECT_GT(refused, 500);  // most of these values are wrong for most parameters
}

// Issue 22's probes: sizes beyond what the machine or the time type can hold are refused before
// anything is built or simulated, each with one line naming the parameter and the limit.
TEST(CliBadInput, RunsThatCannotFitAreRefusedUpFront) {
  expect_bad_input({"run", "--tokens", "9223372036854775807"}, "run.tokens: must be at most 1099511627776");
  expect_bad_input({"run", "--tokens", "2147483648", "--set", "run.memory_budget=8GiB"},
                   "run.memory_budget: the run needs about");
  expect_bad_input({"run", "--set", "model.ffn_hidden=2000000000"},
                   "run.time_limit: the layer's expert GEMMs alone need at least 102 s");
  expect_bad_input({"run", "--systems", "ideal", "--tokens", "100000000"},
                   "run.time_limit: the layer's expert GEMMs alone need at least 8.9 s");
  expect_bad_input({"run", "--set", "run.time_limit=2000000s"}, "run.time_limit: must be at most 1000000s");
  expect_bad_input({"bench", "net", "--pattern", "alltoall", "--bytes", "1TiB"},
                   "--bytes: 1099511627776 B per sender is about");
  expect_bad_input({"verify", "--systems", "ideal", "--set", "run.memory_budget=1KiB"}, "run.memory_budget");
  // A bandwidth of 1 B/s makes transfers longer than the time type could hold: they saturate,
  // and the run stops at its time limit instead of wrapping.
  expect_bad_input({"run", "--systems", "ideal", "--set", "gpu.hbm_bandwidth=1B/s", "--set", "run.time_limit=1000000s",
                    "--set", "net.fidelity=flow"},
                   "run.time_limit: system ideal was still running");
}

// The largest hub buffer the parameters allow costs this program only the entries a run
// touches (it once allocated them all and ended in std::bad_alloc after 45 s).
TEST(CliLimits, LargestRpmBufferRunsInTheMemoryItUses) {
  const Result r = moehub({"run", "--tokens", "512", "--systems", "mh-pkt", "--set", "hub.rpm.entries_per_peer=1073741823"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("mh-pkt"), std::string::npos);
}

TEST(CliList, PrintsPresetsAndParametersWithDefaults) {
  const Result r = moehub({"list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dgx-h800"), std::string::npos);
  EXPECT_NE(r.out.find("mixtral-8x7b"), std::string::npos);
  EXPECT_NE(r.out.find("gpu.sm_count"), std::string::npos);
  const Result j = moehub({"list", "--format", "json"});
  ASSERT_EQ(j.status, 0) << j.err;
  const auto list = nlohmann::json::parse(j.out);
  bool found = false;
  for (const auto& p : list["parameters"]) {
    if (p["key"] == "net.gpu_switch_latency") {
      found = true;
      EXPECT_EQ(p["default"], "250ns");
      EXPECT_FALSE(p["description"].get<std::string>().empty());
    }
  }
  EXPECT_TRUE(found);
}

TEST(CliValidate, ShippedPresetsAreValid) {
  for (const auto& kind : {"hardware", "models", "experiments"}) {
    const fs::path folder = fs::path(MOEHUB_SOURCE_DIR) / "configs" / kind;
    if (!fs::exists(folder)) continue;
    for (const auto& e : fs::directory_iterator(folder)) {
      const Result r = moehub({"validate", e.path().string()});
      EXPECT_EQ(r.status, 0) << e.path() << ": " << r.err;
    }
  }
}

TEST(CliHelp, HelpExitsZero) {
  const Result r = moehub({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("run"), std::string::npos);
}

}  // namespace
