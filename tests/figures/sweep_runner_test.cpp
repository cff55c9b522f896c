// SweepRunner with a fake simulation: results go to the cache on the coordinating side, a run
// without a result stops the sweep when keep_going is false, and the progress it writes.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "config/preset_catalog.h"
#include "figures/config_source.h"
#include "figures/sweep_runner.h"
#include "systems/param_catalog.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

class SweepRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("moehub-sweep-runner-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "three.toml") << "[figure]\nkind = \"fig13\"\n[sweep]\nmodels = [\"mixtral-8x7b\"]\n"
                                          "gpus = [2]\ntokens = [64, 128, 256]\nsystems = [\"ideal\"]\n";
    cache_.emplace(dir_ / "cache");
    const FigureSpec spec = load_figure_spec(dir_ / "three.toml");
    for (const SweepPoint& p : spec.points(false)) requests_.push_back({p, "ideal"});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the three requests on one thread with `simulate`.
  std::vector<RunOutcome> run(const ThreadExecutor::Simulate& simulate, const RunnerOptions& options,
                              SweepSummary* summary = nullptr) {
    ThreadExecutor executor(1, simulate);
    SweepRunner runner(configs_, *cache_, "test-binary", executor, options);
    std::vector<RunOutcome> out = runner.run(requests_);
    if (summary) *summary = runner.summary();
    return out;
  }

  fs::path dir_;
  const ParamRegistry registry_ = build_param_registry();
  const ConfigSource configs_{PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry_};
  std::optional<ResultCache> cache_;
  std::vector<RunRequest> requests_;
};

RunOutcome unsupported(const RunRequest&, const Config&) {
  RunOutcome o;
  o.error = "gpus: not on this system";
  o.unsupported = true;
  return o;
}

TEST_F(SweepRunnerTest, KeepGoingFalseStartsNoRunAfterTheFirstFailure) {
  std::ostringstream progress;
  RunnerOptions options;
  options.progress = &progress;
  options.keep_going = false;
  options.tag = "sweep";
  SweepSummary sum;
  const std::vector<RunOutcome> out = run(unsupported, options, &sum);
  ASSERT_EQ(out.size(), 3u);
  // The most expensive run (256 tokens) went first and failed; the others never started.
  EXPECT_TRUE(out[2].unsupported);
  EXPECT_FALSE(out[2].not_run);
  for (const size_t i : {0, 1}) {
    EXPECT_FALSE(out[i].ok);
    EXPECT_TRUE(out[i].not_run);
    EXPECT_FALSE(out[i].unsupported);
    EXPECT_EQ(out[i].error, "not run (an earlier run failed)");
  }
  EXPECT_EQ(sum.unsupported, 1u);
  EXPECT_EQ(sum.not_run, 2u);
  EXPECT_EQ(sum.computed, 0u);
  EXPECT_EQ(sum.failed, 0u);
  EXPECT_EQ(progress.str(), "sweep: 3 runs, 3 distinct: 0 cached, 3 to compute on 1 job(s)\n"
                            "sweep: " + requests_[2].point.label() + " ideal: unsupported: gpus: not on this system\n"
                            "sweep: 2 run(s) not started (an earlier run failed)\n");
}

TEST_F(SweepRunnerTest, KeepGoingRunsEverything) {
  std::ostringstream progress;
  RunnerOptions options;
  options.progress = &progress;
  SweepSummary sum;
  const std::vector<RunOutcome> out = run(unsupported, options, &sum);
  for (const auto& o : out) EXPECT_TRUE(o.unsupported && !o.not_run);
  EXPECT_EQ(sum.unsupported, 3u);
  EXPECT_EQ(sum.not_run, 0u);
  EXPECT_EQ(progress.str().find('\r'), std::string::npos) << "not a terminal: no live line";
  EXPECT_EQ(progress.str().find("not started"), std::string::npos);
}

TEST_F(SweepRunnerTest, TheRunnerCachesWhatItComputed) {
  const auto fake = [](const RunRequest& req, const Config&) {
    RunOutcome o;
    o.ok = true;
    o.result.system = req.system;
    o.result.layer = Time::from_ps(1000 * req.point.tokens);
    o.moe_flops = 2.5;
    o.wall_s = 0.01;
    o.cpu_s = 0.02;
    return o;
  };
  std::ostringstream progress;
  RunnerOptions options;
  options.progress = &progress;
  options.terminal = true;
  SweepSummary sum;
  std::vector<RunOutcome> out = run(fake, options, &sum);
  EXPECT_EQ(sum.computed, 3u);
  const std::string text = progress.str();
  EXPECT_NE(text.find("\rfigures: 3/3 runs done, 0 failed, "), std::string::npos) << text;
  EXPECT_NE(text.find("about "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  // Each cache entry keeps the run's wall and CPU seconds (a regeneration measured per run).
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "cache")) {
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(e.path()));
    EXPECT_EQ(j.at("wall_s").get<double>(), 0.01);
    EXPECT_EQ(j.at("cpu_s").get<double>(), 0.02);
    ++entries;
  }
  EXPECT_EQ(entries, 3u);

  const auto never = [](const RunRequest&, const Config&) -> RunOutcome {
    ADD_FAILURE() << "a cached run was simulated";
    return {};
  };
  out = run(never, RunnerOptions{}, &sum);
  EXPECT_EQ(sum.cached, 3u);
  EXPECT_EQ(sum.computed, 0u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(out[i].ok && out[i].from_cache);
    EXPECT_EQ(out[i].result.layer, Time::from_ps(1000 * requests_[i].point.tokens));
    EXPECT_EQ(out[i].moe_flops, 2.5);
  }
}

}  // namespace
}  // namespace moehub
