// The pieces of a sweep that travel between processes (RunRequest and RunOutcome as JSON) and
// the thread executor's order: the most expensive run first, nothing started after a stop, a
// memory cap that keeps large runs apart.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "config/preset_catalog.h"
#include "figures/config_source.h"
#include "figures/run_executor.h"
#include "sim/error.h"
#include "systems/param_catalog.h"

namespace moehub {
namespace {

RunRequest tiny_request(const std::string& system) {
  RunRequest r;
  r.system = system;
  r.point.model = "mixtral-8x7b";
  r.point.gpus = 2;
  r.point.tokens = 64;
  r.point.imbalance = 0.25;
  r.point.origin = "tiny.toml: sweep";
  r.point.settings = {{"run.model", "mixtral-8x7b", "tiny.toml:5"},
                      {"run.gpus", "2", "tiny.toml:6"},
                      {"run.tokens", "64", "tiny.toml:7"},
                      {"run.seed", "3", "tiny.toml:8"}};
  return r;
}

TEST(RunRequestJson, RoundTripsThePointAndSystem) {
  const RunRequest r = tiny_request("ideal");
  const RunRequest back = RunRequest::from_json(nlohmann::json::parse(r.to_json().dump()));
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.point.label(), r.point.label());
  ASSERT_EQ(back.point.settings.size(), 4u);
  EXPECT_EQ(back.point.settings[3].origin, "tiny.toml:8");
  const std::vector<SweepSetting> settings = run_settings(back);
  ASSERT_EQ(settings.size(), 5u);
  EXPECT_EQ(settings.back().path, "run.systems");
  EXPECT_EQ(settings.back().text, "ideal");
  EXPECT_THROW(RunRequest::from_json({{"system", "ideal"}}), std::logic_error);
}

// A real run, so the result carries every kind of field (times, optionals, stats, frame).
TEST(RunOutcomeJson, RoundTripsASimulatedRunAndAFailure) {
  const ParamRegistry registry = build_param_registry();
  const ConfigSource configs(PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry);
  const RunRequest request = tiny_request("ideal");
  const Config config = configs.build(run_settings(request));
  RunOutcome o = simulate_run(request, config);
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_GT(o.moe_flops, 0);
  EXPECT_GT(o.wall_s, 0);
  EXPECT_GT(o.cpu_s, 0);  // the simulating thread's CPU time: a run does work
  o.key = "0123456789abcdef";
  const RunOutcome back = RunOutcome::from_json(nlohmann::json::parse(o.to_json().dump()));
  EXPECT_EQ(back.to_json(), o.to_json());
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.key, o.key);
  EXPECT_EQ(back.moe_flops, o.moe_flops);
  EXPECT_EQ(back.result.layer, o.result.layer);
  EXPECT_EQ(back.result.breakdown, o.result.breakdown);
  EXPECT_EQ(back.result.e2e_ms, o.result.e2e_ms);
  EXPECT_EQ(back.result.routing_to_gemm1, o.result.routing_to_gemm1);
  EXPECT_EQ(back.result.events, o.result.events);

  RunOutcome failed;
  failed.error = "model.experts: 8 experts do not divide over 3 GPUs";
  failed.unsupported = true;
  const RunOutcome failed_back = RunOutcome::from_json(nlohmann::json::parse(failed.to_json().dump()));
  EXPECT_FALSE(failed_back.ok);
  EXPECT_TRUE(failed_back.unsupported);
  EXPECT_FALSE(failed_back.not_run);
  EXPECT_EQ(failed_back.error, failed.error);
  EXPECT_FALSE(failed.to_json().contains("result"));
  RunOutcome not_run;
  not_run.not_run = true;
  EXPECT_TRUE(RunOutcome::from_json(not_run.to_json()).not_run);
  EXPECT_THROW(RunOutcome::from_json({{"ok", true}}), std::logic_error);
}

TEST(RunOutcomeJson, AnUnregisteredSystemFailsWithoutThrowing) {
  const ParamRegistry registry = build_param_registry();
  const ConfigSource configs(PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry);
  const Config config = configs.build(run_settings(tiny_request("ideal")));
  const RunOutcome o = simulate_run(tiny_request("no-such-system"), config);
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.unsupported);
  EXPECT_NE(o.error.find("no-such-system"), std::string::npos) << o.error;
}

TEST(EstimatedCost, IsTokensTimesTopKTimesHidden) {
  const ParamRegistry registry = build_param_registry();
  const ConfigSource configs(PresetCatalog(MOEHUB_SOURCE_CONFIG_DIR), registry);
  const Config config = configs.build(run_settings(tiny_request("ideal")));
  EXPECT_EQ(estimated_cost(config), 64.0 * 2 * 4096);  // Mixtral-8x7B: top-2, hidden 4096
}

// Tasks whose costs are given; the fake simulation records the order runs start in.
struct Recorded {
  std::vector<RunRequest> requests;
  std::vector<RunTask> tasks;
  std::vector<std::string> started;
};

Recorded tasks_with_costs(const Config& config, const std::vector<double>& costs) {
  Recorded r;
  for (size_t i = 0; i < costs.size(); ++i) r.requests.push_back(tiny_request("task" + std::to_string(i)));
  for (size_t i = 0; i < costs.size(); ++i) r.tasks.push_back({&r.requests[i], &config, costs[i]});
  return r;
}

TEST(ThreadExecutor, HandsOutTheMostExpensiveRunFirst) {
  const ParamRegistry registry = build_param_registry();
  const Config config(registry);  // never read by the fake simulation
  Recorded r = tasks_with_costs(config, {3, 9, 1, 9, 5});
  ThreadExecutor executor(1, [&](const RunRequest& req, const Config&) {
    r.started.push_back(req.system);
    RunOutcome o;
    o.ok = true;
    return o;
  });
  std::vector<size_t> finished;
  executor.execute(r.tasks, [&](size_t t, RunOutcome o) {
    EXPECT_TRUE(o.ok);
    finished.push_back(t);
  });
  EXPECT_EQ(r.started, (std::vector<std::string>{"task1", "task3", "task4", "task0", "task2"}));
  EXPECT_EQ(finished, (std::vector<size_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(longest_first(r.tasks), finished);
  EXPECT_EQ(executor.workers(), 1u);
  EXPECT_EQ(ThreadExecutor(4).describe(2), "2 job(s)");
}

TEST(ThreadExecutor, StartsNothingAfterAStopRequest) {
  const ParamRegistry registry = build_param_registry();
  const Config config(registry);
  Recorded r = tasks_with_costs(config, {1, 2, 3, 4});
  ThreadExecutor executor(1, [&](const RunRequest& req, const Config&) {
    r.started.push_back(req.system);
    return RunOutcome{};
  });
  std::vector<size_t> finished;
  executor.execute(r.tasks, [&](size_t t, RunOutcome) {
    finished.push_back(t);
    if (finished.size() == 2) executor.request_stop();
  });
  EXPECT_EQ(finished, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(r.started.size(), 2u);
  executor.clear_stop();
  finished.clear();
  executor.execute(r.tasks, [&](size_t t, RunOutcome) { finished.push_back(t); });
  EXPECT_EQ(finished.size(), 4u);
}

// Two threads and a cap of 7 units: the most expensive run (6 units) waits until a small one
// (1 unit) has started beside it, which only happens if the second large run (5 units, the
// next by cost) is held back; a run above the cap (100 units) starts once it is alone.
TEST(ThreadExecutor, AMemoryCapKeepsLargeRunsApartAndLetsSmallOnesBesideThem) {
  const ParamRegistry registry = build_param_registry();
  const Config config(registry);
  Recorded r = tasks_with_costs(config, {9, 8, 2, 1, 0.5});
  const std::vector<uint64_t> memory{6, 5, 1, 1, 100};
  for (size_t i = 0; i < r.tasks.size(); ++i) r.tasks[i].memory = memory[i];
  std::mutex m;
  std::condition_variable cv;
  std::set<std::string> running;
  std::map<std::string, std::set<std::string>> beside;  // task -> the tasks in progress when it started
  bool small_started = false, waited = false;
  ThreadExecutor executor(2, [&](const RunRequest& req, const Config&) {
    std::unique_lock<std::mutex> lock(m);
    beside[req.system] = running;
    running.insert(req.system);
    if (req.system == "task2") small_started = true;
    cv.notify_all();
    if (req.system == "task0") {  // a deadline, not a timing assert: it fails only if task2 never comes
      waited = cv.wait_for(lock, std::chrono::seconds(30), [&] { return small_started; });
    }
    running.erase(req.system);
    RunOutcome o;
    o.ok = true;
    return o;
  }, 7);
  size_t finished = 0;
  executor.execute(r.tasks, [&](size_t, RunOutcome) { ++finished; });
  EXPECT_EQ(finished, 5u);
  EXPECT_TRUE(waited) << "the small run did not start beside the large one";
  EXPECT_EQ(beside["task2"], (std::set<std::string>{"task0"}));
  EXPECT_EQ(beside["task1"].count("task0"), 0u) << "two large runs met";
  EXPECT_TRUE(beside["task4"].empty()) << "a run above the cap runs alone";
  EXPECT_EQ(jobs_memory_cap(""), 0u);
  EXPECT_EQ(jobs_memory_cap("8GiB"), 8ull << 30);
  EXPECT_THROW(jobs_memory_cap("lots"), UserError);
  EXPECT_THROW(jobs_memory_cap("0GiB"), UserError);
}

}  // namespace
}  // namespace moehub
