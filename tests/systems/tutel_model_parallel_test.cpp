// Tutel's parallel_type 'model' path (src/systems/tutel/tutel_shards.h,
// docs/research/tutel-model-parallel.md): which parallel.tp it runs, the capacity alignment, the
// dispatch matrix and the functional check of the summed shard partials.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "systems/system_run.h"
#include "systems/toy_network.h"
#include "systems/tutel/tutel_capacity.h"
#include "systems/tutel/tutel_shards.h"
#include "systems/tutel/tutel_system.h"

namespace moehub {
namespace {

using test::run_system;

std::string refusal(std::vector<std::string> sets) {
  ParamRegistry registry = build_param_registry();
  return tutel_tp_refusal(test::make_config(registry, std::move(sets)));
}

// Mixtral's 8 experts (the verify shapes): only 16 GPUs at TP 2 or 32 at TP 4 take the path.
TEST(TutelModelParallel, RunsOnlyTpNOverEUnderParallelTypeModel) {
  const std::string model = "systems.tutel.parallel_type=model";
  EXPECT_EQ(refusal({"run.gpus=16", "parallel.tp=2", model}), "");
  EXPECT_EQ(refusal({"run.gpus=32", "parallel.tp=4", model}), "");
  EXPECT_EQ(refusal({"run.gpus=16", model}), "");  // no TP asked: nothing to refuse
  // The default adaptive:1 keeps its refusal (tests/cli/tp_cli_test.cpp checks its text).
  const std::string def = refusal({"run.gpus=16", "parallel.tp=2"});
  EXPECT_EQ(def.rfind("has no EP+TP model: Tutel v0.3.0 shards an expert only with fewer experts than GPUs", 0), 0u) << def;
  EXPECT_TRUE(def.ends_with("; run it with parallel.tp = 1 (got 2)")) << def;
  // T is N / E, not free.
  const std::string t4 = refusal({"run.gpus=16", "parallel.tp=4", model});
  EXPECT_NE(t4.find("moe_layer.py L102-106, L118-119"), std::string::npos) << t4;
  EXPECT_TRUE(t4.ends_with("run it with parallel.tp = 2 (got 4)")) << t4;
  // As many experts as GPUs: sharded_count 1, no expert is sharded.
  const std::string even = refusal({"run.gpus=8", "parallel.tp=2", model});
  EXPECT_NE(even.find("only with fewer experts than GPUs"), std::string::npos) << even;
  EXPECT_TRUE(even.ends_with("run it with parallel.tp = 1 (got 2)")) << even;
}

// alignment = sharded_count x overlap degree (moe_layer.py:268): 24 tokens per GPU, top-2 of 8:
// 2 x int(1.0 x ceil(24 / 8)) = 6 rows, rounded up to a multiple of 2 x 2 = 8.
TEST(TutelModelParallel, CapacityAlignsToShardsTimesOverlapDegree) {
  EXPECT_EQ(tutel_capacity(1.0, 24, 8, 2, 99, 2 * 2), 8);
  EXPECT_EQ(tutel_capacity(1.0, 24, 8, 2, 99, 2), 6);
  auto r = run_system("tutel", {"run.gpus=16", "parallel.tp=2", "run.tokens=384", "systems.tutel.parallel_type=model",
                                "systems.tutel.overlap_degree=2"});
  EXPECT_EQ(r->stats["capacity"], 8);
  EXPECT_EQ(r->stats["sharded_count"], 2);
  // Every GPU computes its one shard on all 16 sources' 8 slots: 16 x 16 x 8.
  EXPECT_EQ(r->stats["expert_slots"], 16 * 16 * 8);
}

// 4 GPUs, 2 experts (r = 2), 32 tokens: capacity 2 x int(ceil(8 / 2)) = 8 rows of 64 bf16 = 128 B.
// Pure EP would send each expert's 8 slots to its one GPU; 'model' sends them to both shards:
// every (source, destination) block is 8 x 128 = 1024 B, 4 x 1024 per source = r x (2 x 1024).
TEST(TutelModelParallel, DispatchSendsEverySlotToEveryShard) {
  const PerPair<uint64_t> bytes = tutel_a2a_bytes({1, 1, 1, 1}, 8, 128);
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) EXPECT_EQ(bytes(s, d), 1024u) << s << " -> " << d;
  }
  EXPECT_EQ(tutel_a2a_bytes({2, 0}, 8, 128)(1, 0), 2048u);  // pure EP, 2 local experts on GPU 0
  // On wires between GPU pairs: dispatch and combine 4 x 3 x 1024 B each, a pair small enough
  // for NCCL's LL protocol (16-byte lines of 8 data bytes and a flag: 2 x the bytes;
  // net/collectives.h), and the fc2-bias all-gather: each GPU's 32 bf16 (64 B) to its partner.
  test::SystemRun r("tutel",
                    {"run.gpus=4", "parallel.tp=2", "model.experts=2", "run.tokens=32", "systems.tutel.parallel_type=model"},
                    true, test::ConfigBase::Verify, test::kToy);
  r.run();
  EXPECT_EQ(r.stats["capacity"], 8);
  EXPECT_EQ(r.cluster->network().stats()["bytes"], 2 * (2 * 4 * 3 * 1024) + 4 * 64);
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump();
}

// Each shard's partial output (F / 2 columns), the bias scaled by 1 / r, the partials summed
// before decode: the output matches the unsharded reference at overlap degrees 1 and 2, with
// the capacity dropping rows (factor 0.5) and without.
TEST(TutelModelParallel, SummedShardPartialsMatchTheReference) {
  for (const char* degree : {"1", "2"}) {
    for (const char* cf : {"1.0", "0.5"}) {
      auto r = run_system("tutel",
                          {"run.gpus=16", "parallel.tp=2", "systems.tutel.parallel_type=model",
                           std::string("systems.tutel.overlap_degree=") + degree, std::string("systems.tutel.capacity_factor=") + cf},
                          true);
      EXPECT_TRUE(r->functional->passed()) << degree << " " << cf << ": " << r->functional->report().dump();
    }
  }
}

}  // namespace
}  // namespace moehub
