#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "moe/placement_history.h"
#include "moe/routing_trace.h"
#include "moe/workload.h"
#include "moe_test_config.h"
#include "sim/error.h"

namespace moehub {
namespace {

// 4 tokens (2 per GPU), 4 experts, top-2. Layers 0 and 1 are two past batches, layer 2 the
// simulated one:
//   layer 0: t0 {0,3} t1 {0,3} t2 {0,1} t3 {2,3} -> loads {3, 1, 1, 3}
//   layer 1: t0 {0,3} t1 {0,2} t2 {0,3} t3 {2,3} -> loads {3, 0, 2, 3}   (sum {6, 1, 3, 6})
//   layer 2: t0 {1,0} t1 {1,2} t2 {1,2} t3 {1,3} -> loads {1, 4, 2, 1}   (expert 1 turns hot)
constexpr const char* kTrace = R"(token,layer,experts,weights
0,0,0;3,
1,0,0;3,
2,0,0;1,
3,0,2;3,
0,1,0;3,
1,1,0;2,
2,1,0;3,
3,1,2;3,
0,2,1;0,
1,2,1;2,
2,2,1;2,
3,2,1;3,
)";

class TraceFile {
 public:
  TraceFile() : path_(std::filesystem::temp_directory_path() / ("moehub-eplb-history-" + std::to_string(::getpid()) + ".csv")) {
    std::ofstream(path_) << kTrace;
  }
  ~TraceFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

Workload four_expert_workload(const std::string& trace, const std::string& load, int64_t window) {
  const ParamRegistry r = test::workload_registry();
  const Config c = test::workload_config(
      r, "mixtral-8x7b",
      "[model]\nexperts = 4\n[run]\ngpus = 2\ntokens = 4\n[workload]\nredundant_experts = 2\ntrace_layer = 2\n"
      "routing_trace = \"" + trace + "\"\nplacement_load = \"" + load + "\"\nplacement_window = " +
          std::to_string(window) + "\n");
  return Workload::build(WorkloadConfig::from(c), ModelShape::from(c));
}

TEST(PlacementHistory, TraceLayerLoadsSumTheRange) {
  std::istringstream in(kTrace);
  const TraceExpectation e{4, 4, 2, 2};
  EXPECT_EQ(parse_trace_layer_loads(in, "t.csv", TraceFormat::Csv, e, 0, 1), (std::vector<int64_t>{6, 1, 3, 6}));
  std::istringstream again(kTrace);
  EXPECT_EQ(parse_trace_layer_loads(again, "t.csv", TraceFormat::Csv, e, 1, 1), (std::vector<int64_t>{3, 0, 2, 3}));
  std::istringstream missing(kTrace);
  try {
    parse_trace_layer_loads(missing, "t.csv", TraceFormat::Csv, TraceExpectation{4, 4, 2, 5}, 3, 4);
    FAIL();
  } catch (const UserError& err) {
    EXPECT_EQ(err.where(), "t.csv");
  }
}

// History {6, 1, 3, 6}, 2 redundant, 2 GPUs (6 physical, 3 slots each). Replicate: e0 and e3
// tie at 6 -> e0 (3 per copy), then e3 (6 > 3, 3 per copy). Per copy p0..p5 = e0 3, e1 1, e2 3,
// e3 3, e0 3, e3 3; heaviest first p0 p2 p3 p4 p5 p1: G0, G1, G0 (tie 3|3), G1, G0 (tie 6|6; G0
// full), G1. G0 = {e0, e3, e3}, G1 = {e2, e0, e1}: physical 0 e0, 1 e3, 2 e3 on GPU 0; 3 e2,
// 4 e0, 5 e1 on GPU 1. Static dispatch of layer 2: e1 -> p5 from both GPUs (4 rows), e0 from
// GPU 0 -> p0, e2 -> p3 (2 rows), e3 from GPU 1 -> p1 (no local copy: the first). Rows per
// physical {1, 1, 0, 2, 0, 4}: max 4, max/mean 4 / (8/6) = 3; GPUs {2, 6}: max/mean 1.5.
// The oracle (layer 2's own {1, 4, 2, 1}): e1 gets both copies (4 -> 2 per copy, then 2 > 2 is
// false for e2: e1 again); heaviest first p2 (e2, 2), p1 p4 p5 (e1, 4/3), p0 (e0), p3 (e3):
// G0 = {e2, e1, e3}, G1 = {e1, e1, e0}; rows {2, 2, 1, 2, 0, 1}: max 2, max/mean 1.5; GPUs {5, 3}.
TEST(PlacementHistory, PreviousTraceLayersPlaceTheReplicas) {
  const TraceFile f;
  const Workload w = four_expert_workload(f.path().string(), "previous", 2);
  EXPECT_EQ(w.replicas().logical_of, (std::vector<int32_t>{0, 3, 3, 2, 0, 1}));
  EXPECT_EQ(w.replicas().gpu_of, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(w.routing().tokens_per_expert(), (std::vector<int64_t>{1, 1, 0, 2, 0, 4}));
  const nlohmann::json rep = w.summary()["replication"];
  EXPECT_EQ(rep["placement_load"], "previous");
  EXPECT_EQ(rep["placement_from"], "trace layers 0..1");
  EXPECT_EQ(rep["placement_tokens_per_expert"], (std::vector<int64_t>{6, 1, 3, 6}));
  EXPECT_DOUBLE_EQ(rep["max_over_mean_physical"].get<double>(), 3.0);
  EXPECT_EQ(rep["max_rows_per_gpu"], 6);
  EXPECT_DOUBLE_EQ(rep["max_over_mean_gpu"].get<double>(), 1.5);
  EXPECT_EQ(rep["oracle"]["max_tokens_per_physical_expert"], 2);
  EXPECT_DOUBLE_EQ(rep["oracle"]["max_over_mean_physical"].get<double>(), 1.5);
  EXPECT_EQ(rep["oracle"]["max_rows_per_gpu"], 5);
  // The routing itself is the trace's layer 2 either way.
  EXPECT_EQ(w.logical_routing().tokens_per_expert(), (std::vector<int64_t>{1, 4, 2, 1}));

  const Workload oracle = four_expert_workload(f.path().string(), "this-layer", 2);
  EXPECT_EQ(oracle.replicas().logical_of, (std::vector<int32_t>{2, 1, 3, 1, 1, 0}));
  EXPECT_EQ(oracle.routing().tokens_per_expert(), (std::vector<int64_t>{2, 2, 1, 2, 0, 1}));
  const nlohmann::json orep = oracle.summary()["replication"];
  EXPECT_EQ(orep["placement_load"], "this-layer");
  EXPECT_DOUBLE_EQ(orep["max_over_mean_physical"].get<double>(), 1.5);
  EXPECT_FALSE(orep.contains("oracle"));
}

TEST(PlacementHistory, WindowLongerThanTheTraceIsRefused) {
  const TraceFile f;
  try {
    four_expert_workload(f.path().string(), "previous", 3);  // layer 2 has two layers before it
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "workload.placement_window");
  }
}

// The blend: correlation 1 keeps the simulated batch's shape, 0 is the past seed's own draw.
TEST(PlacementHistory, PastShapesBlendTheDraws) {
  const std::vector<double> now = synthetic_shape(7, 16);
  const uint64_t past = past_batch_seed(7, 1);
  EXPECT_NE(past, past_batch_seed(7, 2));
  EXPECT_NE(past, past_batch_seed(8, 1));
  EXPECT_EQ(past_batch_shape(now, past, 1.0), now);
  EXPECT_EQ(past_batch_shape(now, past, 0.0), synthetic_shape(past, 16));
  const std::vector<double> half = past_batch_shape(now, past, 0.6);
  const std::vector<double> own = synthetic_shape(past, 16);
  for (size_t e = 0; e < now.size(); ++e) EXPECT_DOUBLE_EQ(half[e], 0.6 * now[e] + 0.8 * own[e]);
}

// A window of past batches sums each batch's loads; correlation 0 makes batch b the
// generator's draw with its own seed.
TEST(PlacementHistory, SyntheticHistorySumsIndependentDraws) {
  const SyntheticRoutingSpec now{512, 16, 2, 0.03, 5};
  std::vector<int64_t> expect(16, 0);
  for (int64_t b = 1; b <= 3; ++b) {
    SyntheticRoutingSpec past = now;
    past.seed = past_batch_seed(5, b);
    const std::vector<int64_t> l = synthetic_expert_loads(past);
    for (size_t e = 0; e < 16; ++e) expect[e] += l[e];
  }
  EXPECT_EQ(synthetic_history_load(now, 3, 0.0), expect);
  // Correlation 1: every past batch has the simulated batch's popularity, so the history is
  // three times its loads up to the remainder rows, which fall by each batch's seed.
  const std::vector<int64_t> here = synthetic_expert_loads(now);
  const std::vector<int64_t> same = synthetic_history_load(now, 3, 1.0);
  for (size_t e = 0; e < 16; ++e) EXPECT_NEAR(same[e], 3 * here[e], 3);
}

// A synthetic run: the placement comes from other draws, the routing stays the run's own.
TEST(PlacementHistory, SyntheticPreviousKeepsTheRouting) {
  const ParamRegistry r = test::workload_registry();
  const std::string base = "[run]\ntokens = 512\n[workload]\nimbalance_std = 0.03\nredundant_experts = 4\n";
  const Config now = test::workload_config(r, "qwen1.5-moe-a2.7b", base);
  const Config prev = test::workload_config(r, "qwen1.5-moe-a2.7b", base + "placement_load = \"previous\"\n");
  const Workload a = Workload::build(WorkloadConfig::from(now), ModelShape::from(now));
  const Workload b = Workload::build(WorkloadConfig::from(prev), ModelShape::from(prev));
  EXPECT_EQ(a.logical_routing().expert_ids(), b.logical_routing().expert_ids());
  const nlohmann::json rep = b.summary()["replication"];
  EXPECT_EQ(rep["placement_from"], "synthetic: past batches 1..1 (seeds derived from run.seed 1)");
  const SyntheticRoutingSpec spec{512, 60, 4, 0.03, 1};
  EXPECT_EQ(rep["placement_tokens_per_expert"], synthetic_history_load(spec, 1, 0.0));
  EXPECT_EQ(b.replicas().logical_of, eplb_replicas(synthetic_history_load(spec, 1, 0.0), 4, 8).logical_of);
  // The oracle block is the this-layer run's balance.
  const nlohmann::json orep = a.summary()["replication"];
  EXPECT_EQ(rep["oracle"]["max_over_mean_physical"], orep["max_over_mean_physical"]);
  EXPECT_EQ(rep["oracle"]["max_rows_per_gpu"], orep["max_rows_per_gpu"]);
}

}  // namespace
}  // namespace moehub
