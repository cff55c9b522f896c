#include <gtest/gtest.h>

#include "config/config.h"
#include "sim/error.h"

namespace moehub {
namespace {

ParamRegistry make_registry() {
  ParamRegistry r;
  r.integer("gpu.sm_count", "SMs").at_least(1).at_most(1024);
  r.time("net.latency", "latency");
  r.bandwidth("net.bandwidth", "bandwidth").positive();
  r.real("workload.std", "std").range(0, 1);
  r.boolean("run.functional", "functional");
  r.choice("net.fidelity", {"packet", "flow"}, "fidelity");
  r.bytes("net.flit", "flit").positive();
  r.integer_list("moe.map", "map").at_least(0);
  return r;
}

const char* kGood = R"(
[gpu]
sm_count = 132
[net]
latency = "250ns"
bandwidth = "200GB/s"
fidelity = "packet"
flit = "16B"
[workload]
std = 0.03
[run]
functional = false
[moe]
map = [0, 1, 2]
)";

// Expects a UserError naming `where` and mentioning `fragment`.
template <typename F>
void expect_user_error(F&& f, const std::string& where, const std::string& fragment) {
  try {
    f();
    FAIL() << "expected a UserError at " << where;
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Config, ResolvesTypedValues) {
  const ParamRegistry r = make_registry();
  Config c(r);
  c.merge_text(kGood, "good.toml");
  c.resolve();
  EXPECT_EQ(c.integer("gpu.sm_count"), 132);
  EXPECT_EQ(c.time("net.latency").ps(), 250000);
  EXPECT_EQ(c.bandwidth("net.bandwidth").bytes_per_second(), 200000000000ULL);
  EXPECT_DOUBLE_EQ(c.real("workload.std"), 0.03);
  EXPECT_FALSE(c.boolean("run.functional"));
  EXPECT_EQ(c.string("net.fidelity"), "packet");
  EXPECT_EQ(c.bytes("net.flit"), 16u);
  EXPECT_EQ(c.integer_list("moe.map"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(c.origin("gpu.sm_count"), "good.toml:3");
  EXPECT_EQ(c.to_json()["net"]["latency"], "250ns");
  EXPECT_EQ(c.to_json()["gpu"]["sm_count"], 132);
}

TEST(Config, LaterValuesAndOverridesWin) {
  const ParamRegistry r = make_registry();
  Config c(r);
  c.merge_text(kGood, "good.toml");
  c.merge_text("[gpu]\nsm_count = 114\n", "h100-pcie.toml");
  c.set_assignment("net.latency=1us", "--set");
  c.set("workload.std", "0.05", "--imbalance");
  c.set("moe.map", "3,2, 1", "--set");
  c.resolve();
  EXPECT_EQ(c.integer("gpu.sm_count"), 114);
  EXPECT_EQ(c.time("net.latency"), Time::from_us(1));
  EXPECT_DOUBLE_EQ(c.real("workload.std"), 0.05);
  EXPECT_EQ(c.integer_list("moe.map"), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(c.origin("workload.std"), "--imbalance");
}

TEST(Config, UnknownKeysNameTheFullPath) {
  const ParamRegistry r = make_registry();
  Config c(r);
  expect_user_error([&] { c.merge_text("[gpu]\nsm_cuont = 3\n", "x.toml"); }, "gpu.sm_cuont", "unknown key");
  expect_user_error([&] { c.merge_text("[gppu]\nsm_count = 3\n", "x.toml"); }, "gppu", "unknown section");
  expect_user_error([&] { c.set_assignment("gpu.nope=1", "--set"); }, "--set", "unknown key 'gpu.nope'");
  expect_user_error([&] { c.set_assignment("gpu.sm_count", "--set"); }, "--set", "KEY=VALUE");
}

TEST(Config, WrongTypesAndRangesAreErrors) {
  const ParamRegistry r = make_registry();
  const auto resolve_with = [&](const std::string& extra) {
    Config c(r);
    c.merge_text(kGood, "good.toml");
    c.merge_text(extra, "bad.toml");
    c.resolve();
  };
  expect_user_error([&] { resolve_with("[gpu]\nsm_count = \"many\"\n"); }, "gpu.sm_count", "expected an integer");
  expect_user_error([&] { resolve_with("[gpu]\nsm_count = 0\n"); }, "gpu.sm_count", "at least 1");
  expect_user_error([&] { resolve_with("[gpu]\nsm_count = 5000\n"); }, "gpu.sm_count", "at most 1024");
  expect_user_error([&] { resolve_with("[net]\nbandwidth = \"0GB/s\"\n"); }, "net.bandwidth", "greater than 0");
  expect_user_error([&] { resolve_with("[net]\nlatency = 250\n"); }, "net.latency", "written as a string");
  expect_user_error([&] { resolve_with("[net]\nlatency = \"250 lightyears\"\n"); }, "net.latency", "unknown unit");
  expect_user_error([&] { resolve_with("[net]\nfidelity = \"cycle\"\n"); }, "net.fidelity", "one of packet, flow");
  expect_user_error([&] { resolve_with("[workload]\nstd = 1.5\n"); }, "workload.std", "at most 1");
  expect_user_error([&] { resolve_with("[moe]\nmap = [0, -1]\n"); }, "moe.map", "at least 0");
  expect_user_error([&] { resolve_with("[run]\nfunctional = 1\n"); }, "run.functional", "true or false");
}

TEST(Config, MissingValuesAreErrors) {
  const ParamRegistry r = make_registry();
  Config c(r);
  c.merge_text("[gpu]\nsm_count = 1\n", "partial.toml");
  expect_user_error([&] { c.resolve(); }, "net.latency", "missing");
}

TEST(Config, SyntaxErrorsNameFileAndLine) {
  const ParamRegistry r = make_registry();
  Config c(r);
  expect_user_error([&] { c.merge_text("[gpu]\nsm_count = = 3\n", "broken.toml"); }, "broken.toml:2", "");
}

TEST(Config, FlagTextIsParsedByDeclaredType) {
  const ParamRegistry r = make_registry();
  Config c(r);
  expect_user_error([&] { c.set("gpu.sm_count", "12x", "--gpus"); }, "gpu.sm_count", "expected an integer");
  expect_user_error([&] { c.set("workload.std", "lots", "--imbalance"); }, "workload.std", "expected a number");
  expect_user_error([&] { c.set("run.functional", "yes please", "--set"); }, "run.functional", "true or false");
}

}  // namespace
}  // namespace moehub
