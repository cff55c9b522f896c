// End-to-end tests of the scale-out fabric (issue 23): a 2-node H800 cluster at flow fidelity,
// `--nodes`, and the one-line refusals of what the fabric cannot run. Small layers (the verify
// experiment's shapes, OLMoE's 64 experts over 16 GPUs) keep each test to seconds.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

// A small timing-only run (the verify experiment's OLMoE shapes) of some systems, as JSON.
nlohmann::json small_run(std::vector<std::string> args, const std::string& systems) {
  for (const char* a : {"--config", "verify", "--set", "run.functional=false", "--model", "olmoe", "--format", "json"}) {
    args.emplace_back(a);
  }
  args.insert(args.end(), {"--systems", systems});
  const Result r = moehub(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(CliScale, VerifyPassesForEverySystemOnTwoNodes) {
  const Result r = moehub({"verify", "--hardware", "h800-cluster", "--model", "olmoe", "--systems", "all"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("64 experts top-8, 16 GPUs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  int passed = 0;
  for (const auto& l : lines(r.out)) passed += l.find(" PASS ") != std::string::npos;
  EXPECT_EQ(passed, 11) << r.out;
}

// Issue 23's done-when at packet fidelity: every system through ScaleOutPackets, with the
// end-of-run conservation check (every fabric packet delivered, every queue pair's window empty).
TEST(CliScale, VerifyPassesForEverySystemOnTwoNodesAtPacketFidelity) {
  const Result r = moehub({"verify", "--hardware", "h800-cluster", "--model", "olmoe", "--set", "net.fidelity=packet",
                           "--check", "--systems", "all"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  int passed = 0;
  for (const auto& l : lines(r.out)) passed += l.find(" PASS ") != std::string::npos;
  EXPECT_EQ(passed, 11) << r.out;
}

TEST(CliScale, NodesSetsTheGpuCountAndTheFabricCarriesRdma) {
  const auto j = small_run({"run", "--hardware", "h800-cluster", "--nodes", "2"}, "ideal,megatron-te");
  ASSERT_TRUE(j.contains("results"));
  EXPECT_EQ(j["config"]["run"]["gpus"], 16);
  EXPECT_EQ(j["config"]["net"]["gpus_per_node"], 8);
  for (const auto& res : j["results"]) {
    if (res["system"] == "ideal") continue;
    const auto& net = res["network"];
    EXPECT_EQ(net["nodes"], 2) << res["system"];
    EXPECT_GT(net["rdma_payload_bytes"].get<uint64_t>(), 0u) << res["system"];
    EXPECT_GT(net["rdma_messages"].get<uint64_t>(), 0u) << res["system"];
    // dispatch_GBps split by the peer's node: both parts there, adding up to the whole.
    for (const std::string phase : {"dispatch", "combine"}) {
      const double all = res[phase + "_GBps"].get<double>();
      const double nvlink = res[phase + "_nvlink_GBps"].get<double>(), rdma = res[phase + "_rdma_GBps"].get<double>();
      EXPECT_GT(nvlink, 0.0) << phase;
      EXPECT_GT(rdma, 0.0) << phase;
      EXPECT_NEAR(nvlink + rdma, all, 1e-9 * all) << phase;
    }
  }
  // One node: no split.
  const auto one = small_run({"run", "--gpus", "8"}, "megatron-te");
  ASSERT_TRUE(one.contains("results"));
  EXPECT_TRUE(one["results"][0].contains("dispatch_GBps"));
  EXPECT_FALSE(one["results"][0].contains("dispatch_rdma_GBps"));
}

// The NVL72-class domain: 64 of its 72 GPUs on one NVLink domain of 18 planes (OLMoE's 64
// experts do not divide over 72), and a domain larger than a switch chip's 72 ports is refused.
TEST(CliScale, Nvl72DomainRunsSixtyFourGpusOnOneNvlinkDomain) {
  const auto j = small_run({"run", "--hardware", "gb200-nvl72", "--gpus", "64"}, "ideal,moehub");
  ASSERT_TRUE(j.contains("results"));
  EXPECT_EQ(j["config"]["net"]["switch_planes"], 18);
  EXPECT_EQ(j["config"]["net"]["gpus_per_node"], 0);
  for (const auto& res : j["results"]) EXPECT_GT(res["layer_us"].get<double>(), 0.0) << res["system"];
  expect_bad_input({"run", "--hardware", "gb200-nvl72", "--gpus", "80"},
                   "run.gpus: 80 GPUs x 1 links per plane need 80 ports on each switch, which has 72");
}

TEST(CliScale, RefusesWhatTheFabricCannotRunBeforeSimulating) {
  expect_bad_input({"run", "--nodes", "2"}, "--nodes: hardware 'dgx-h800' is a single NVLink domain");
  expect_bad_input({"run", "--gpus", "64"}, "run.gpus: 64 GPUs x 2 links per plane need 128 ports");
  expect_bad_input({"run", "--hardware", "h800-cluster", "--nodes", "2", "--gpus", "16"}, "--nodes: give either");
  expect_bad_input({"run", "--hardware", "h800-cluster", "--gpus", "12"}, "run.gpus: 12 GPUs are not whole nodes of 8");
  expect_bad_input({"run", "--hardware", "h800-cluster", "--nodes", "9", "--set", "net.fidelity=packet"},
                   "net.fidelity: the packet fidelity models up to 64 GPUs, not 72 (9 nodes of 8)");
  expect_bad_input({"run", "--hardware", "h800-cluster", "--set", "net.gpus_per_node=40"}, "net.gpus_per_node: 40 GPUs per node");
  // 257 nodes: 9 leaves of 32 NICs per rail, 72 leaves for spines of 64 ports.
  expect_bad_input({"run", "--hardware", "h800-cluster", "--nodes", "257", "--tokens", "8224"},
                   "net.fabric_switch_ports: 257 nodes need 72 leaves");
}

// DeepSeek-V3's multi-plane fat tree (h800-mpft): systems whose cross-node traffic stays on its
// rail (NCCL with PXN, DeepEP's normal kernels, MoE-Hub's rail route) run as on h800-cluster's
// shared spines, to the picosecond; a system that sends across planes stops with one line.
TEST(CliScale, MultiPlaneFabricRunsRailLocalSystemsAndRefusesCrossPlaneTraffic) {
  const std::string systems = "ideal,megatron-te,tutel,deepep,moehub";
  const std::vector<std::string> rail = {"--set", "hub.internode.route=rail"};
  std::vector<std::string> mpft = {"run", "--hardware", "h800-mpft"}, shared = {"run", "--hardware", "h800-cluster"};
  mpft.insert(mpft.end(), rail.begin(), rail.end());
  shared.insert(shared.end(), rail.begin(), rail.end());
  const auto a = small_run(mpft, systems);
  const auto b = small_run(shared, systems);
  ASSERT_TRUE(a.contains("results") && b.contains("results"));
  EXPECT_EQ(a["config"]["net"]["fabric_planes"], "per-rail");
  ASSERT_EQ(a["results"].size(), 5u);
  for (size_t i = 0; i < a["results"].size(); ++i) {
    EXPECT_EQ(a["results"][i]["layer_us"], b["results"][i]["layer_us"]) << a["results"][i]["system"];
  }
  const Result r = moehub({"run", "--hardware", "h800-mpft", "--config", "verify", "--set", "run.functional=false",
                           "--model", "olmoe", "--systems", "comet"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("moehub: error: net.fabric_planes: gpu"), std::string::npos) << r.err;
}

// Racks of NVL72-class domains over NICs: two racks of 72 GPUs (DeepSeek-V3's 256 experts plus
// 32 redundant ones, two per GPU), four rails of 36 NICs.
TEST(CliScale, Nvl72RacksRunOverTheFabric) {
  const Result r = moehub({"run", "--hardware", "gb200-nvl72-cluster", "--model", "deepseek-v3", "--tokens", "1152", "--set",
                           "workload.redundant_experts=32", "--systems", "ideal,megatron-te", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["run"]["gpus"], 144);
  EXPECT_EQ(j["config"]["net"]["fabric_rails"], 4);
  const auto& net = j["results"][1]["network"];
  EXPECT_EQ(net["nodes"], 2);
  EXPECT_GT(net["rdma_payload_bytes"].get<uint64_t>(), 0u);
  // 4 rails x 2 leaves (36 NICs over 32-NIC leaves), 32 spines: 256 leaf-spine links each way.
  int spine_links = 0;
  for (const auto& l : net["links"]) spine_links += l["to"].get<std::string>().rfind("spine", 0) == 0;
  EXPECT_EQ(spine_links, 256);
}

// DeepEP's low-latency kernels (docs/systems/deepep.md "Low-latency kernels"): rows reach their
// experts and come back on two nodes (IBGDA puts between them), and what the kernels cannot
// take is refused with the parameter that limits it.
TEST(CliScale, DeepEpLowLatencyVerifiesOnTwoNodesAndRefusesTooManyTokens) {
  const Result r = moehub({"verify", "--hardware", "h800-cluster", "--model", "olmoe", "--systems", "deepep", "--set",
                           "systems.deepep.mode=low-latency"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("deepep         PASS"), std::string::npos) << r.out;
  expect_bad_input({"run", "--systems", "deepep", "--set", "systems.deepep.mode=low-latency"},
                   "systems.deepep.ll_max_dispatch_tokens_per_rank: system 'deepep' (low-latency) dispatches 1024 tokens "
                   "from GPU 0, more than its 128 receive slots per (expert, source); set it to at least 1024");
  // Normal mode on 32 nodes: DeepEP's CTAs would need 32 + 8 warp groups per SM (at most 32);
  // named before the memory estimate, which a raised budget would only trade for this.
  expect_bad_input({"run", "--hardware", "h800-cluster", "--gpus", "256", "--model", "deepseek-v3", "--tokens", "65536",
                    "--systems", "deepep"},
                   "systems.deepep.mode: system 'deepep' (normal) internode kernels need 40 warp groups per SM on 32 "
                   "nodes, more than gpu.max_blocks_per_sm (32)");
  expect_bad_input({"run", "--systems", "deepep", "--set", "systems.deepep.mode=fast"},
                   "systems.deepep.mode: must be one of normal, low-latency, got 'fast'");
}

}  // namespace
