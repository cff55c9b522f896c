// End-to-end tests of `moehub bench net`: outputs, agreement with the model, bad input.

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
#include <unistd.h>
#include <vector>

#include "cli/cli_support.h"

namespace {

using namespace moehub_test;

namespace fs = std::filesystem;

// Result, slurp, scratch_dir, moehub and expect_bad_input come from cli_support.h.


nlohmann::json bench_json(std::vector<std::string> args) {
  args.insert(args.begin(), {"bench", "net", "--format", "json"});
  const Result r = moehub(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(CliBenchNet, P2pOfOnePacketTakesTheUnloadedLatency) {
  const auto j = bench_json({"--pattern", "p2p", "--bytes", "128"});
  // DGX-H800 preset: 144 B at 50 GB/s per plane (2880 ps) twice, 250 ns each way, 0 ns switch.
  EXPECT_EQ(j["results"]["time_ps"], 2880 + 250000 + 2880 + 250000);
  EXPECT_EQ(j["results"]["pattern"], "p2p");
  EXPECT_EQ(j["results"]["fidelity"], "packet");
  EXPECT_EQ(j["config"]["run"]["gpus"], 8);
  EXPECT_EQ(j["results"]["net"]["links"].size(), 2u * 8 * 4);
  EXPECT_TRUE(j["perf"].contains("wall_s"));
}

TEST(CliBenchNet, IncastGivesEachSenderASeventhOfTheLinks) {
  const auto j = bench_json({"--pattern", "incast", "--bytes", "1MiB"});
  const double share = 200.0 * 128 / 144 / 7;  // GB/s per sender
  EXPECT_NEAR(j["results"]["achieved_GBps"].get<double>(), share, 0.05 * share);
  // GPU 0's incoming links are the busy ones.
  for (const auto& l : j["results"]["net"]["links"]) {
    if (l["to"] == "gpu0") {
      EXPECT_GT(l["utilisation"].get<double>(), 0.9);
    }
  }
}

TEST(CliBenchNet, AllToAllInBothFidelitiesAgrees) {
  const auto packet = bench_json({"--pattern", "alltoall", "--bytes", "4MiB"});
  const auto flow = bench_json({"--pattern", "alltoall", "--bytes", "4MiB", "--fidelity", "flow"});
  EXPECT_EQ(flow["results"]["fidelity"], "flow");
  const double p = packet["results"]["achieved_GBps"];
  const double f = flow["results"]["achieved_GBps"];
  EXPECT_NEAR(p / f, 1.0, 0.05);
  EXPECT_LT(f, 160.0);  // 200 GB/s x 128/160 with acks
}

TEST(CliBenchNet, RingSendsEachRankItsShareToTheNextOnly) {
  // 8 GPUs, 8 MiB: each sends 7/8 of it, 7 MiB, to its successor alone at one link's rate
  // (200 GB/s x 128 B of payload per 144 B packet, less NCCL's slot turnarounds).
  const auto j = bench_json({"--pattern", "ring", "--bytes", "8MiB", "--fidelity", "flow"});
  EXPECT_EQ(j["results"]["bytes_per_sender"], 7u * 1024 * 1024);
  const double link = 200.0 * 128 / 144;
  EXPECT_LT(j["results"]["achieved_GBps"].get<double>(), link);
  EXPECT_GT(j["results"]["achieved_GBps"].get<double>(), 0.8 * link);
  // Packet and flow fidelity agree on it.
  const auto packet = bench_json({"--pattern", "ring", "--bytes", "8MiB"});
  EXPECT_NEAR(packet["results"]["achieved_GBps"].get<double>() / j["results"]["achieved_GBps"].get<double>(), 1.0, 0.05);
}

TEST(CliBenchNet, GpusAndSetReachTheModel) {
  const auto j = bench_json({"--pattern", "p2p", "--bytes", "128", "--gpus", "4", "--set", "net.gpu_switch_latency=100ns"});
  EXPECT_EQ(j["results"]["gpus"], 4);
  EXPECT_EQ(j["results"]["time_ps"], 2880 + 100000 + 2880 + 100000);
}

TEST(CliBenchNet, TableNamesTheResultsAndLinks) {
  const Result r = moehub({"bench", "net", "--pattern", "p2p", "--bytes", "1KiB"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("achieved_GBps"), std::string::npos);
  EXPECT_NE(r.out.find("gpu0->sw0"), std::string::npos);
  EXPECT_NE(r.out.find("sw3->gpu1"), std::string::npos);
}

TEST(CliBenchNet, BadInputExitsWithStatusTwo) {
  expect_bad_input({"bench", "net", "--pattern", "butterfly", "--bytes", "1"}, "--pattern");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "0"}, "--bytes: must be greater than 0");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "12 parsecs"}, "--bytes");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--gpus", "1"}, "at least 2 GPUs");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--fidelity", "cycle"}, "--fidelity");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--set", "net.link_bandwidth=0GB/s"},
                   "net.link_bandwidth");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--set", "net.switch_buffer=0B"},
                   "net.switch_buffer");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--set", "net.switch_planes=3"},
                   "net.switch_planes");
  expect_bad_input({"bench", "net", "--pattern", "p2p", "--bytes", "1", "--gpus", "40"}, "run.gpus");
  expect_bad_input({"bench", "net", "--bytes", "1"}, "--pattern");
}

}  // namespace
