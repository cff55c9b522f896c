// The ideal layer and the experiment runner on small configurations built from the presets.
// Model-level tests (numbers: timing, counts, statistics) split from ideal_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include "config/config_builder.h"
#include "systems/param_catalog.h"
#include "sim/error.h"
#include "platform/experiment.h"
#include "systems/system_registry.h"
#include "systems/small_layer.h"

namespace moehub {
namespace {

using test::SmallLayer;


TEST(Experiment, LinkStatisticsCoverTheRunNotTheWatchdogLimit) {
  // Utilisation is measured over the simulated run; the run ends with its last event (a
  // trailing ack at most a round trip after the layer), not at run.time_limit.
  SmallLayer s({"run.tokens=1024", "run.gpus=4"});
  ExperimentOptions opt;
  const auto out = run_experiment(s.config, *s.workload, {find_system("megatron-te")}, opt);
  const nlohmann::json r = out[0].result.to_json();
  const double layer_ps = r["layer_us"].get<double>() * 1e6;
  const double elapsed_ps = r["network"]["elapsed_ps"].get<double>();
  EXPECT_GE(elapsed_ps, 0.9 * layer_ps);
  EXPECT_LE(elapsed_ps, layer_ps + 10e6) << "10 us of slack for trailing acks";
}

TEST(Ideal, MoreTokensTakeLonger) {
  SmallLayer small({"run.tokens=1024"});
  SmallLayer large({"run.tokens=16384"});
  ExperimentOptions opt;
  const double t1 = run_experiment(small.config, *small.workload, {find_system("ideal")}, opt)[0].result.layer.us();
  const double t2 = run_experiment(large.config, *large.workload, {find_system("ideal")}, opt)[0].result.layer.us();
  EXPECT_GT(t2, t1);
}

TEST(Experiment, ResultsDoNotDependOnThreadCount) {
  SmallLayer s({"run.tokens=128"});  // every system, kept small for the sanitizer build (25 s at 256)
  ExperimentOptions one, two;
  two.threads = 2;
  const auto systems = select_systems("all");
  const auto a = run_experiment(s.config, *s.workload, systems, one);
  const auto b = run_experiment(s.config, *s.workload, systems, two);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].result.to_json().dump(), b[i].result.to_json().dump());
}

}  // namespace
}  // namespace moehub
