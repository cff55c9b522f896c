// MoE-Hub and its ablations on small layers: the mechanisms, not the paper's numbers.
// Model-level tests (numbers: timing, counts, statistics) split from moehub_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config_builder.h"
#include "gpu/gpu.h"
#include "gpu/gpu_test_support.h"
#include "hub/data_availability_manager.h"
#include "systems/param_catalog.h"
#include "config/preset_catalog.h"
#include "hub/rowsp.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "sim/error.h"
#include "platform/experiment.h"
#include "systems/moehub/dispatch_trace.h"
#include "systems/moehub/hub_fabric.h"
#include "systems/moehub/internode_path.h"
#include "systems/moehub/moehub_state.h"
#include "systems/system_registry.h"
#include "systems/moehub_layer_setup.h"

namespace moehub {
namespace {

using test::hub;
using test::LayerSetup;
using test::small_layer;


TEST(MoeHubSystems, NoHostSynchronisationAndNoShuffles) {
  const LayerSetup s(small_layer(), false);
  for (const auto& o : s.run("mh-base,mh-pkt,mh-dep,moehub")) {
    EXPECT_EQ(o.result.to_json()["breakdown_us"]["synchronisation"].get<double>(), 0.0) << o.name;
    EXPECT_EQ(o.result.to_json()["breakdown_us"]["data_shuffles"].get<double>(), 0.0) << o.name;
  }
}

TEST(MoeHubSystems, Gemm1TilesStartBeforeTheLastRowArrives) {
  // Enough rows (8 MiB into each GPU) that the dispatch outlasts the host's launch sequence.
  const LayerSetup s({"run.tokens=2048", "model.hidden=1024", "model.ffn_hidden=2048"}, false);
  const auto out = s.run("moehub");
  const SystemOutcome& o = out.at(0);
  const auto& first = hub(o)["gemm1_first_tile_us"];
  const auto& last = hub(o)["dispatch_end_us"];
  for (size_t g = 0; g < first.size(); ++g) EXPECT_LT(first[g].get<double>(), last[g].get<double>()) << "GPU " << g;
}

// EP+TP: both TP ranks receive the same rows, so neither starts GEMM1 much later. Mixtral rows
// (8 KiB, the whole store staging) at TP 2, 1024 tokens: when every producer stored rank 0's
// shard first, rank 1's first tiles started at 49.2-52.0 us against 43.1-45.8 us for rank 0.
TEST(MoeHubSystems, EveryTpRankStartsGemm1AsEarly) {
  const LayerSetup s({"run.tokens=1024", "parallel.tp=2"}, false);
  const auto out = s.run("moehub");
  const auto& first = hub(out.at(0))["gemm1_first_tile_us"];
  double even = 0, odd = 0;
  for (size_t g = 0; g < first.size(); ++g) (g % 2 ? odd : even) = std::max(g % 2 ? odd : even, first[g].get<double>());
  EXPECT_LT(odd, even + 1.0);
  EXPECT_LT(even, odd + 1.0);
}

// MH-Base's software signalling (docs/hub/ablation.md 12): a producer stores its row counts
// only after every row it stored has landed (a release fence), and a polling GEMM1 block starts
// only once every source's count is in, so no GPU's first tile starts before the last row into
// any GPU has landed; with the hub's per-tile flags the tiles start while rows still arrive.
// Polls by hand: 2048 tokens on 8 GPUs, one local expert each, a region of every token (2048
// rows = 16 M-tiles of 128) times 2 x 2048 / 128 = 32 N-tiles = 512 GEMM1 blocks per GPU, each
// loading its expert's 8 counts (one 32 B sector) at least once: at least 8 x 512 = 4096 loads.
TEST(SoftwareSignal, CountsAfterAFenceHoldGemm1UntilEveryRowLanded) {
  // Enough rows (8 MiB into each GPU) that the dispatch outlasts the host's launch sequence.
  const std::vector<std::string> layer = {"run.tokens=2048", "model.hidden=1024", "model.ffn_hidden=2048"};
  for (const char* system : {"mh-base", "mh-pkt"}) {
    const LayerSetup counts(layer, false);
    std::vector<std::string> sets = layer;
    sets.push_back("systems.moehub.software_signal=hub-tile-flags");
    const LayerSetup flags(sets, false);
    const auto out_c = counts.run(system), out_f = flags.run(system);
    const SystemOutcome &c = out_c.at(0), &f = out_f.at(0);
    double last_row = 0;
    for (const auto& d : hub(c)["dispatch_latency"]["last_row_landed_us"]) last_row = std::max(last_row, d.get<double>());
    for (const auto& t : hub(c)["gemm1_first_tile_us"]) EXPECT_GT(t.get<double>(), last_row) << system;
    double earliest = 1e9;
    for (const auto& t : hub(f)["gemm1_first_tile_us"]) earliest = std::min(earliest, t.get<double>());
    EXPECT_LT(earliest, last_row) << system;
    EXPECT_GE(hub(c)["polls"].get<uint64_t>(), 4096u) << system;
    EXPECT_GT(c.result.layer, f.result.layer) << system;
  }
}

// The combine side of the same protocol (DeepEP's low-latency combine): an expert GPU stores its
// combine-done flag only after every result row it stored has landed, and a scaling block polls
// every expert GPU's flag before it reduces, so no GPU reduces before the last result row into
// any GPU has landed; the hub's per-block flags (hub-tile-flags) make the layer shorter.
// Polls by hand, on top of GEMM1's 4096 (above): 256 tokens per GPU and a 512-entry table give
// one token per scaling block, 256 blocks per GPU, each loading the flags at least once: 2048.
TEST(SoftwareSignal, CombineFlagsAfterAFenceHoldScalingUntilEveryResultLanded) {
  const std::vector<std::string> layer = {"run.tokens=2048", "model.hidden=1024", "model.ffn_hidden=2048"};
  const LayerSetup counts(layer, false);
  std::vector<std::string> sets = layer;
  sets.push_back("systems.moehub.software_signal=hub-tile-flags");
  const LayerSetup flags(sets, false);
  const auto out_c = counts.run("mh-base"), out_f = flags.run("mh-base");
  const nlohmann::json& c = hub(out_c.at(0));
  double last_result = 0;
  for (const auto& d : c["combine_end_us"]) last_result = std::max(last_result, d.get<double>());
  for (const auto& t : c["scaling_first_block_us"]) EXPECT_GT(t.get<double>(), last_result);
  EXPECT_GE(c["polls"].get<uint64_t>(), 4096u + 2048u);
  EXPECT_FALSE(hub(out_f.at(0)).contains("scaling_first_block_us"));
  EXPECT_GT(out_c.at(0).result.layer, out_f.at(0).result.layer);
}

// The finer protocol (source-chunks, DeepEP's intranode channel tails): a routing block releases
// its rows to a GPU with a tail store after a fence (VerifyPassesForEveryVariant checks that no
// GEMM1 tile reads a row before its release). By hand: 256 tokens per GPU over
// 132 SMs x 8 routing blocks leave at most one token per block; its two experts (one per GPU)
// are on two GPUs, so each of the 2048 tokens' blocks fences once at its end and stores one tail
// to each of two GPUs (2 rows < signal_chunk_rows = 6: no release before the end): 2048 fences,
// 4096 tails. The grid is pinned at 8 blocks per SM (the default is 1) to keep one token a block.
TEST(SoftwareSignal, ChunkTailsOnePerBlockAndGpuByHand) {
  const std::vector<std::string> layer = {"run.tokens=2048", "model.hidden=1024", "model.ffn_hidden=2048",
                                          "systems.moehub.routing_blocks_per_sm=8"};
  const LayerSetup counts(layer, false);
  std::vector<std::string> sets = layer;
  sets.push_back("systems.moehub.software_signal=source-chunks");
  const LayerSetup chunks(sets, false);
  const auto out_c = counts.run("mh-base"), out_k = chunks.run("mh-base");
  const nlohmann::json& k = hub(out_k.at(0));
  EXPECT_EQ(k["chunk_fences"].get<uint64_t>(), 2048u);
  EXPECT_EQ(k["chunk_tail_stores"].get<uint64_t>(), 4096u);
  EXPECT_FALSE(hub(out_c.at(0)).contains("chunk_fences"));
}

TEST(MoeHubSystems, DamVariantsNeverPollWhilePollingVariantsDo) {
  const LayerSetup s(small_layer(), false);
  const auto out = s.run("mh-base,mh-pkt,mh-dep,moehub");
  EXPECT_GT(hub(out[0])["polls"].get<uint64_t>(), 0u);
  EXPECT_GT(hub(out[1])["polls"].get<uint64_t>(), 0u);
  EXPECT_EQ(hub(out[2])["polls"].get<uint64_t>(), 0u);
  EXPECT_EQ(hub(out[3])["polls"].get<uint64_t>(), 0u);
  EXPECT_EQ(hub(out[0])["dam_released_or_retired_blocks"].get<uint64_t>(), 0u);
  EXPECT_GT(hub(out[2])["dam_released_or_retired_blocks"].get<uint64_t>(), 0u);
  // Polling variants park nothing, so they avoid no flag loads (the count for parked blocks is
  // tested in tests/gpu/wait_test.cpp; in this small layer the rows arrive before the GEMM's
  // blocks are reached, so the DAM variants park none either).
  EXPECT_EQ(hub(out[0])["poll_loads_avoided"].get<uint64_t>(), 0u);
  EXPECT_TRUE(hub(out[3]).contains("poll_loads_avoided"));
}

}  // namespace
}  // namespace moehub

namespace moehub {
namespace {


}  // namespace
}  // namespace moehub
