// The resource estimate made before a run: hand-computed for Mixtral-8x7B on the DGX-H800.

#include <gtest/gtest.h>

#include <algorithm>

#include "net/net_config.h"
#include "net/send_windows.h"
#include "platform/experiment.h"
#include "platform/resource_estimate.h"
#include "sim/error.h"
#include "systems/system_registry.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

TEST(ResourceEstimate, MemoryAndTheLayersLowerBound) {
  const ParamRegistry registry = build_param_registry();
  const Config c = test::make_config(registry, {"run.tokens=1000", "run.memory_budget=1MiB"}, test::ConfigBase::Defaults);
  const ModelShape m = ModelShape::from(c);
  const ResourceEstimate e = estimate_resources(c, m, {find_system("ideal")}, 1);
  // The program's 10 MiB and 1 MiB for each of 8 GPUs, 1000 tokens x 8 B + 2000 rows x (8 B
  // workload + 24 B of ideal's state).
  const uint64_t program = 10485760u + 8u * 1048576;
  EXPECT_EQ(e.memory_bytes, program + 1000u * 8 + 2000u * (8 + 24));
  EXPECT_EQ(e.budget_bytes, 1048576u);
  // 2 x 2000 rows x 4096 x (2 x 14336 + 14336) FLOPs over 8 GPUs x 132 SMs x 4096 FLOP/clock x 1.83 GHz.
  EXPECT_NEAR(e.min_layer_seconds, 2.0 * 2000 * 4096 * 43008 / (8.0 * 132 * 4096 * 1.83e9), 1e-12);
  // Two costlier systems at once: deepep's 112 B per row, twice.
  const ResourceEstimate two = estimate_resources(c, m, {find_system("ideal"), find_system("deepep")}, 2);
  EXPECT_EQ(two.memory_bytes, program + 1000u * 8 + 2000u * 8 + 2000u * 112 * 2);
}

TEST(ResourceEstimate, RefusesWhatExceedsTheBudget) {
  const ParamRegistry registry = build_param_registry();
  const Config c = test::make_config(registry, {"run.tokens=100000", "run.memory_budget=1MiB"}, test::ConfigBase::Defaults);
  EXPECT_THROW(check_resources(c, ModelShape::from(c), {find_system("ideal")}, 1), UserError);
  const Config roomy = test::make_config(registry, {"run.tokens=100000"}, test::ConfigBase::Defaults);
  EXPECT_NO_THROW(check_resources(roomy, ModelShape::from(roomy), {find_system("ideal")}, 1));
}

// Flow fidelity on 2 nodes of 8 (Mixtral: 8192 B rows, top-2). The send windows per GPU: NVLink
// requests (8 KiB egress + 4 planes x 32 KiB) / 16 B header-only messages + 1 = 8705, responses
// (1 + 4) x 32 KiB / 16 B + 1 = 10241, NIC 8 remote GPUs x 1024 = 8192: 27138; 16 GPUs 434208.
TEST(ResourceEstimate, SendWindowsBoundTheMessagesInFlight) {
  const ParamRegistry registry = build_param_registry();
  const Config one = test::make_config(registry, {"run.gpus=8", "net.fidelity=flow"}, test::ConfigBase::Defaults);
  EXPECT_EQ(SendWindows::most_outstanding(NetConfig::from(one, 8)), 8u * (8705 + 10241));
  const Config two = test::make_config(registry, {"run.gpus=16", "net.gpus_per_node=8", "net.fidelity=flow"},
                                       test::ConfigBase::Defaults);
  EXPECT_EQ(SendWindows::most_outstanding(NetConfig::from(two, 16)), 434208u);
}

TEST(ResourceEstimate, FlowMessagesAreAPhasesOrWhatTheSystemsPathsAllow) {
  const ParamRegistry registry = build_param_registry();
  const std::vector<std::string> flow{"run.gpus=16", "net.gpus_per_node=8", "net.fidelity=flow"};
  const auto estimate = [&](const char* system, std::vector<std::string> more) {
    std::vector<std::string> a = flow;
    a.insert(a.end(), more.begin(), more.end());
    const Config c = test::make_config(registry, a, test::ConfigBase::Defaults);
    return estimate_resources(c, ModelShape::from(c), {find_system(system)}, 1).memory_bytes;
  };
  // 65536 tokens: 131072 rows, 131072 x 64 = 8388608 messages of 128 B a phase; the program
  // and 16 GPUs 10485760 + 16 x 1048576 B, the workload 65536 x 8 + 131072 x 8 = 1572864 B.
  const std::vector<std::string> big{"run.tokens=65536"};
  const uint64_t program = 10485760u + 16u * 1048576, workload = program + 1572864;
  // MoE-Hub: its windows, 434208 messages of 160 B, and 1024 B per row.
  EXPECT_EQ(estimate("moehub", big), workload + 131072u * 1024 + 160u * 434208);
  EXPECT_EQ(estimate("mh-base", big), workload + 131072u * 1024 + 160u * 434208);
  // Across nodes by the rail route a relay queues what it forwards: a phase's messages.
  std::vector<std::string> rail = big;
  rail.push_back("hub.internode.route=rail");
  EXPECT_EQ(estimate("moehub", rail), workload + 131072u * 1024 + 160u * 8388608);
  // Megatron-TE: 3 group calls x 240 pairs x 4 channels x 8 steps + 240 all-gather blocks; the
  // calls' 720 pairs of 400 B.
  const uint64_t pairs = 720u * 400;
  EXPECT_EQ(estimate("megatron-te", big), workload + 131072u * 54 + pairs + 160u * (3 * 240 * 4 * 8 + 240));
  // Tutel, degree 1: scatter, gather and the capacity all-reduce.
  EXPECT_EQ(estimate("tutel", big), workload + 131072u * 64 + pairs + 160u * (3 * 240 * 4 * 8));
  // FasterMoE: the count exchange and, per direction, one call per (step, local expert), each
  // pair in one step: (1 + 2 x ceil(8 experts / 16 GPUs)) x 7680 chunks; 16 GPUs x 4 steps x
  // 32 kernels of 416 B.
  EXPECT_EQ(estimate("fastermoe", big), workload + 131072u * 25 + pairs + 16u * 4 * 32 * 416 + 160u * (3 * 240 * 4 * 8));
  // DeepEP: the windows plus 16 GPUs x 10 channels x 2 nodes x 2 (put and head) x (ceil(128 / 20)
  // + ceil(128 / 12)) = 11520 RDMA messages.
  EXPECT_EQ(estimate("deepep", big), workload + 131072u * 112 + 160u * (434208 + 11520));
  std::vector<std::string> ll = big;
  ll.push_back("systems.deepep.mode=low-latency");
  // Low-latency: whole (token, expert) messages posted without waiting, dispatch and combine
  // 131072 each, and a count and a flag per (GPU, expert): 2 x 131072 + 2 x 16 x 8 = 262400;
  // each GPU's signals, a receive count per (local expert, source) and a finish counter and a
  // flag per expert: 16 x 3 x 8 of 256 B.
  EXPECT_EQ(estimate("deepep", ll), workload + 131072u * 112 + 16u * 3 * 8 * 256 + 160u * 262400);
  // Comet and CCFuser: their reads and stores ask each message's path (RemoteMemory, the store
  // port): the windows or what the layer sends, whichever is fewer. Their StreamCollectives are
  // all-to-alls over the 240 pairs (nccl_messages_bound): Comet's two all-gathers carry 4096
  // tokens x top-2 picks per pair, 2 B probabilities and 8 B indices (81920 B), and its three
  // barriers (after GEMM1, before and after layer1) a flag each: 240 x 81944 = 19666560 B, 5 x 240
  // pairs + 38 chunks + 301 parts = 1539; with gets a fourth barrier: 240 x 81952 B, 1440 + 38 +
  // 301 = 1779. CCFuser's count all-gather (8 experts x 8 B) and two barriers: 240 x 80 B, 720 +
  // 1 + 1 = 722. Each StreamCollective keeps 240 pairs of 400 B and 16 x 16 pair sizes of 8 B:
  // 98048 B. Comet's layer: 131072 dispatch stores + 131072 x 8 column splits of combine stores,
  // above the windows, as with gets (16 GPUs x a request and a response at once + the combine).
  const uint64_t collective = 240u * 400 + 256 * 8;
  EXPECT_EQ(estimate("comet", big), workload + 131072u * 240 + 5 * collective + 160u * (434208 + 1539));
  std::vector<std::string> gets = big;
  gets.push_back("systems.comet.dispatch=copy_engine_gets");
  EXPECT_EQ(estimate("comet", gets), workload + 131072u * 240 + 6 * collective + 160u * (434208 + 1779));
  // CCFuser's layer: 131072 rows / 64 + 8 experts x 16 sources = 2176 blocks, each a read (request
  // and response) and 4096 / 512 = 8 result stores: 21760, below the windows.
  EXPECT_EQ(estimate("ccfuser", big), workload + 131072u * 64 + 3 * collective + 160u * (21760 + 722));
  // Ideal moves nothing between GPUs.
  EXPECT_EQ(estimate("ideal", big), workload + 131072u * 24);
  // 1000 tokens: a phase (2000 rows x 64 = 128000 messages) is below the windows.
  EXPECT_EQ(estimate("moehub", {"run.tokens=1000"}), program + 1000u * 8 + 2000u * 8 + 2000u * 1024 + 160u * 128000);
}

// NCCL's transfers: a pair's connections (nccl_pair_channels: one per 64 KiB, at most 4) each
// have at most min(8 steps, its chunks of 512 KiB) messages out; the bound is pairs + bytes /
// 512 KiB + bytes / 64 KiB, rounded up, and never more than pairs x 4 x 8.
TEST(ResourceEstimate, NcclMessagesAreBoundedByPairsAndBytes) {
  const NcclConfig cfg;  // 512 KiB chunks, 8 steps, 4 channels per peer
  EXPECT_EQ(nccl_messages_bound(cfg, 240, 0), 240u);
  EXPECT_EQ(nccl_messages_bound(cfg, 240, 1), 242u);
  EXPECT_EQ(nccl_messages_bound(cfg, 240, 10485760), 240u + 20 + 160);
  EXPECT_EQ(nccl_messages_bound(cfg, 240, 1073741824), 240u * 4 * 8);
  // One pair of b bytes against what AllToAll::add_pair gives it: its connections' steps, each
  // connection at most 8 at once.
  for (uint64_t b : {1ull, 65536ull, 65537ull, 200000ull, 524288ull, 524289ull, 3000000ull, 4194304ull, 40000000ull}) {
    const int k = nccl_pair_channels(cfg, b);
    const uint64_t share = ((b + k - 1) / k + 127) / 128 * 128;
    uint64_t most = 0;
    for (uint64_t off = 0; off < b; off += share) {
      most += std::min<uint64_t>(8, (std::min(share, b - off) + cfg.chunk_bytes - 1) / cfg.chunk_bytes);
    }
    EXPECT_LE(most, nccl_messages_bound(cfg, 1, static_cast<long double>(b))) << b;
  }
  // 65536 B: one connection, one chunk; 524289 B: 4 connections of 131072 (+128) B, one chunk each.
  EXPECT_EQ(nccl_messages_bound(cfg, 1, 65536), 1u + 1 + 1);
  EXPECT_EQ(nccl_messages_bound(cfg, 1, 524289), 1u + 2 + 9);
}

// 64 GPUs (8 nodes) x 100 tokens of Mixtral (8192 B rows, top-2; 56 redundant experts: one per
// GPU): 12800 rows, 100 MiB a phase, 819200 messages of 128 B; 4032 ordered pairs.
TEST(ResourceEstimate, NcclSystemsCountPairsAndBytesNotEveryConnectionFull) {
  const ParamRegistry registry = build_param_registry();
  const auto estimate = [&](const char* system) {
    const Config c = test::make_config(registry, {"run.gpus=64", "net.gpus_per_node=8", "net.fidelity=flow",
                                                  "run.tokens=6400", "workload.redundant_experts=56"},
                                       test::ConfigBase::Defaults);
    return estimate_resources(c, ModelShape::from(c), {find_system(system)}, 1).memory_bytes;
  };
  const uint64_t workload = 10485760u + 64u * 1048576 + 6400u * 8 + 12800u * 8;
  // Megatron-TE: 3 calls x 4032 pairs, 3 x 100 MiB: 12096 + 600 + 4800; the all-gather's 4032
  // blocks; 12096 pairs of 400 B.
  const uint64_t pairs = 12096u * 400;
  EXPECT_EQ(estimate("megatron-te"), workload + 12800u * 54 + pairs + 160u * (12096 + 600 + 4800 + 4032));
  // FasterMoE, one local expert: 3 x 4032 pairs; 64 x 64 counts of 8 B and 2 x 100 MiB:
  // 209747968 B, 401 chunks and 3201 parts (rounded up); 64 GPUs x 16 steps x 32 kernels of 416 B.
  EXPECT_EQ(estimate("fastermoe"), workload + 12800u * 25 + pairs + 64u * 16 * 32 * 416 + 160u * (12096 + 401 + 3201));
  // Tutel, degree 1, capacity factor 1: 2 x trunc(ceil(100 / 8)) = 26 slots per expert; 64 GPUs
  // x 64 experts x 26 x 8192 B, scatter and gather, plus 64 x 64 indices of 4 B: 1744846848 B,
  // 3329 chunks, 26625 parts; 3 calls x 4032 pairs.
  EXPECT_EQ(estimate("tutel"), workload + 12800u * 64 + pairs + 160u * (12096 + 3329 + 26625));
}

// The same 64 GPUs x 100 tokens: Comet and CCFuser send fewer messages in the layer than their
// windows allow (64 GPUs x (8705 + 10241 NVLink + 56 remote x 1024 NIC) = 4882560), so the
// layer's count bounds them. Each StreamCollective keeps 4032 pairs of 400 B and 64 x 64 sizes
// of 8 B. Their NCCL messages (nccl_messages_bound): Comet 100 tokens x 2 picks x (2 + 8) B and
// 3 flags per pair, 4032 x 2024 = 8160768 B: 5 x 4032 pairs + 16 chunks + 125 parts = 20301;
// with gets 4 flags, 4032 x 2032 = 8193024 B: 24192 + 16 + 126 = 24334. CCFuser 64 physical
// experts x 8 B and 2 flags, 4032 x 528 = 2128896 B: 12096 + 5 + 33 = 12134.
TEST(ResourceEstimate, CometAndCcfuserCountTheLayersMessagesBelowTheirWindows) {
  const ParamRegistry registry = build_param_registry();
  const auto estimate = [&](const char* system, const char* more) {
    const Config c = test::make_config(registry, {"run.gpus=64", "net.gpus_per_node=8", "net.fidelity=flow",
                                                  "run.tokens=6400", "workload.redundant_experts=56", more},
                                       test::ConfigBase::Defaults);
    return estimate_resources(c, ModelShape::from(c), {find_system(system)}, 1).memory_bytes;
  };
  const uint64_t workload = 10485760u + 64u * 1048576 + 6400u * 8 + 12800u * 8;
  const uint64_t collective = 4032u * 400 + 4096 * 8;
  // Comet: 12800 dispatch stores and 12800 x 8 combine stores.
  EXPECT_EQ(estimate("comet", "run.seed=0"), workload + 12800u * 240 + 5 * collective + 160u * (12800 * 9 + 20301));
  // With copy-engine gets: 64 GPUs x one get (a request and a response of 6400 x 8192 B < 4 GiB).
  EXPECT_EQ(estimate("comet", "systems.comet.dispatch=copy_engine_gets"),
            workload + 12800u * 240 + 6 * collective + 160u * (128 + 12800 * 8 + 24334));
  // Two column splits: 12800 x 3.
  EXPECT_EQ(estimate("comet", "systems.comet.column_splits=2"),
            workload + 12800u * 240 + 5 * collective + 160u * (12800 * 3 + 20301));
  // CCFuser: 12800 / 64 = 200 blocks + 64 physical experts x 64 sources = 4296 blocks, each a read
  // and 8 result stores: 42960; with 8-row blocks 1600 + 4096 = 5696, x 10 = 56960; with
  // 1024-wide tiles 4296 x (2 + 4) = 25776.
  EXPECT_EQ(estimate("ccfuser", "run.seed=0"), workload + 12800u * 64 + 3 * collective + 160u * (42960 + 12134));
  EXPECT_EQ(estimate("ccfuser", "systems.ccfuser.block_rows=8"),
            workload + 12800u * 64 + 3 * collective + 160u * (56960 + 12134));
  EXPECT_EQ(estimate("ccfuser", "systems.ccfuser.tile_n=1024"),
            workload + 12800u * 64 + 3 * collective + 160u * (25776 + 12134));
}

// DeepEP's own limits are named before the estimate (run and verify call require_modelled
// first) and `--systems all` skips it: normal mode's CTAs need a warp group per node and per
// NVLink peer, 32 + 8 = 40 on 32 nodes against gpu.max_blocks_per_sm = 32 (24 nodes + 8 fit);
// low-latency mode's receive slots (128) against ceil(tokens / GPUs).
TEST(ResourceEstimate, DeepEpsOwnLimitsAreRefusalsNotMemory) {
  const ParamRegistry registry = build_param_registry();
  const auto why = [&](std::vector<std::string> a) {
    a.insert(a.end(), {"net.gpus_per_node=8", "net.fidelity=flow"});
    return missing_model(*find_system("deepep"), test::make_config(registry, a, test::ConfigBase::Defaults));
  };
  EXPECT_FALSE(why({"run.gpus=192", "run.tokens=192"}).has_value());
  const std::optional<Unmodelled> normal = why({"run.gpus=256", "run.tokens=256"});
  ASSERT_TRUE(normal.has_value());
  EXPECT_EQ(normal->param, "systems.deepep.mode");
  EXPECT_NE(normal->reason.find("40 warp groups per SM on 32 nodes"), std::string::npos) << normal->reason;
  EXPECT_FALSE(why({"run.gpus=16", "run.tokens=2048", "systems.deepep.mode=low-latency"}).has_value());
  const std::optional<Unmodelled> ll = why({"run.gpus=16", "run.tokens=2049", "systems.deepep.mode=low-latency"});
  ASSERT_TRUE(ll.has_value());
  EXPECT_EQ(ll->param, "systems.deepep.ll_max_dispatch_tokens_per_rank");
  EXPECT_NE(ll->reason.find("dispatches 129 tokens from GPU 0, more than its 128 receive slots"), std::string::npos);
  std::vector<const SystemEntry*> all{find_system("ideal"), find_system("deepep")};
  const auto skipped = drop_unmodelled(all, test::make_config(registry, {"run.gpus=256", "run.tokens=256", "net.gpus_per_node=8",
                                                                          "net.fidelity=flow"},
                                                              test::ConfigBase::Defaults));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].first, "deepep");
  EXPECT_EQ(all.size(), 1u);
}

TEST(ResourceEstimate, SeveralSystemsTakeTheCostliestOfStateAndMessages) {
  const ParamRegistry registry = build_param_registry();
  const Config c = test::make_config(
      registry, {"run.gpus=16", "net.gpus_per_node=8", "net.fidelity=flow", "run.tokens=65536"},
      test::ConfigBase::Defaults);
  const ModelShape m = ModelShape::from(c);
  // DeepEP keeps more messages in flight than MoE-Hub but less per row: 131072 x 112 + 160 x
  // 445728 = 85996544 against 131072 x 1024 + 160 x 434208 = 203691008; twice at once.
  const ResourceEstimate e = estimate_resources(c, m, {find_system("deepep"), find_system("moehub")}, 2);
  EXPECT_EQ(e.memory_bytes, 10485760u + 16u * 1048576 + 1572864 + 2u * 203691008);
}

}  // namespace
}  // namespace moehub
