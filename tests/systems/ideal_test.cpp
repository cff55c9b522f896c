// The ideal layer and the experiment runner on small configurations built from the presets.

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


TEST(SystemRegistry, ListsIdealAndRejectsUnknownNames) {
  EXPECT_NE(find_system("ideal"), nullptr);
  EXPECT_EQ(select_systems("all").size(), all_systems().size());
  EXPECT_THROW(select_systems("ideal,warp"), UserError);
  EXPECT_THROW(select_systems("ideal,ideal"), UserError);
  EXPECT_THROW(select_systems(","), UserError);
}

TEST(Experiment, ARunStillBusyAtTheTimeLimitIsReportedAsStuck) {
  // A real layer takes hundreds of microseconds; a 1 us watchdog must stop it and say why.
  SmallLayer s({"run.tokens=1024", "run.time_limit=1us"});
  ExperimentOptions opt;
  try {
    run_experiment(s.config, *s.workload, {find_system("ideal")}, opt);
    FAIL() << "expected the watchdog to fire";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("system ideal was still running after run.time_limit = 1"), std::string::npos) << e.what();
  }
}

TEST(Ideal, HasNoCommunicationSynchronisationOrShuffles) {
  SmallLayer s({"run.tokens=1024"});
  ExperimentOptions opt;
  const auto out = run_experiment(s.config, *s.workload, {find_system("ideal")}, opt);
  ASSERT_EQ(out.size(), 1u);
  const nlohmann::json r = out[0].result.to_json();
  EXPECT_GT(r["layer_us"].get<double>(), 0.0);
  EXPECT_EQ(r["breakdown_us"]["exposed_communication"].get<double>(), 0.0);
  EXPECT_EQ(r["breakdown_us"]["synchronisation"].get<double>(), 0.0);
  EXPECT_EQ(r["breakdown_us"]["data_shuffles"].get<double>(), 0.0);
  EXPECT_EQ(r["network"]["packets_injected"].get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(r["fraction_of_ideal"].get<double>(), 1.0);
  // The parts of the breakdown add up to the layer time.
  double sum = 0;
  for (const auto& [k, v] : r["breakdown_us"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, r["layer_us"].get<double>(), 1e-6);
}

TEST(Experiment, AResultReadsBackFromItsJsonAsWritten) {
  // The figures' cache stores results as JSON and reads them back typed.
  SmallLayer s({"run.tokens=256"});
  ExperimentOptions opt;
  const auto out = run_experiment(s.config, *s.workload, {find_system("ideal"), find_system("mh-pkt")}, opt);
  for (const auto& o : out) {
    const nlohmann::json j = o.result.to_json();
    EXPECT_EQ(LayerResult::from_json(j).to_json().dump(), j.dump()) << o.name;
    EXPECT_EQ(LayerResult::from_json(j).layer, o.result.layer) << o.name;
  }
}

TEST(Ideal, FunctionalOutputMatchesTheReference) {
  SmallLayer s({"run.tokens=64", "model.hidden=32", "model.ffn_hidden=48", "run.functional=true"});
  ExperimentOptions opt;
  opt.functional = true;
  const auto out = run_experiment(s.config, *s.workload, {find_system("ideal")}, opt);
  EXPECT_TRUE(out[0].functional_passed) << out[0].result.functional.dump();
}

}  // namespace
}  // namespace moehub
