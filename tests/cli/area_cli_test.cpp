// End-to-end tests of `moehub area` through the program: output, overrides, bad input.

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


nlohmann::json area_json(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"area", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = moehub(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

uint64_t bits_of(const nlohmann::json& j, const std::string& structure) {
  for (const auto& s : j["structures"]) {
    if (s["structure"] == structure) return s["bits"].get<uint64_t>();
  }
  ADD_FAILURE() << "no structure " << structure;
  return 0;
}

TEST(CliArea, JsonHasEveryStructureTheTotalAndThePaperFigure) {
  const auto j = area_json();
  EXPECT_EQ(j["hardware"], "dgx-h800");
  EXPECT_EQ(j["technology_nm"], 7);
  EXPECT_GT(j["total_mm2"].get<double>(), 0.0);
  EXPECT_EQ(j["paper"]["total_mm2"], 0.49);
  double sum = 0;
  uint64_t bits = 0;
  for (const auto& s : j["structures"]) {
    sum += s["mm2"].get<double>();
    bits += s["bits"].get<uint64_t>();
  }
  EXPECT_NEAR(j["total_mm2"].get<double>(), sum, 1e-12);
  EXPECT_EQ(j["total_bits"].get<uint64_t>(), bits);
  // dgx-h800: RAT 4096 entries, tag = valid 1 + region log2(64) = 6 + RowID 32.
  EXPECT_EQ(bits_of(j, "rat.tags"), 4096u * 39);
  EXPECT_EQ(bits_of(j, "rpm.data"), 8u * 32 * 1024);
  for (const char* s : {"rat.data", "apt.tags", "apt.data", "rpm.tags", "rpm.mask_age", "dam.table_ranges",
                        "dam.table_data", "dam.counters", "dam.global"}) {
    EXPECT_GT(bits_of(j, s), 0u) << s;
  }
}

const nlohmann::json& logic_block(const nlohmann::json& j, const std::string& name) {
  for (const auto& b : j["logic"]) {
    if (b["block"] == name) return b;
  }
  ADD_FAILURE() << "no logic block " << name;
  return j;
}

TEST(CliArea, JsonReportsLogicBesideStorage) {
  const auto j = area_json();
  const double storage = j["storage_mm2"].get<double>();
  const double logic = j["logic_mm2"].get<double>();
  EXPECT_DOUBLE_EQ(storage, j["total_mm2"].get<double>());
  EXPECT_GT(logic, 0.0);
  EXPECT_NEAR(j["storage_and_logic_mm2"].get<double>(), storage + logic, 1e-12);
  double sum = 0;
  for (const auto& b : j["logic"]) sum += b["mm2"].get<double>();
  EXPECT_NEAR(logic, sum, 1e-12);
  // dgx-h800: 16 banks x 2 ports = 32 lanes, each comparing key 6 + 32 bits (38 XOR2, 37 + 1 NAND2).
  const auto& tags = logic_block(j, "rat.tag_compare");
  EXPECT_EQ(tags["copies"], 32);
  EXPECT_EQ(tags["cells"]["xor2"], 32 * 38);
  EXPECT_EQ(tags["cells"]["nand2"], 32 * 38);
  EXPECT_EQ(logic_block(j, "sm.rowsp_decode")["copies"], 132);  // gpu.sm_count of the H800
  // NAND2 0.05832 um^2, XOR2 0.13122 um^2 (ASAP7), 70 % utilization.
  EXPECT_NEAR(tags["mm2"].get<double>(), 32 * 38 * (0.05832 + 0.13122) / 0.70 / 1e6, 1e-12);
}

TEST(CliArea, LogicFollowsItsParametersAndLeavesStorageAlone) {
  const auto base = area_json();
  const auto sparse = area_json({"--set", "hub.area.logic_utilization=0.35", "--set", "gpu.sm_count=66"});
  EXPECT_DOUBLE_EQ(sparse["total_mm2"].get<double>(), base["total_mm2"].get<double>());
  EXPECT_NEAR(logic_block(sparse, "rat.fifo")["mm2"].get<double>(), 2 * logic_block(base, "rat.fifo")["mm2"].get<double>(),
              1e-15);
  EXPECT_NEAR(logic_block(sparse, "sm.rowsp_decode")["mm2"].get<double>(),
              logic_block(base, "sm.rowsp_decode")["mm2"].get<double>(), 1e-15);  // half the SMs, twice the spread
}

TEST(CliArea, SetOverridesReachTheEstimate) {
  const auto base = area_json();
  const auto big = area_json({"--set", "hub.rat.entries=8192", "--set", "hub.area.sram_mbit_per_mm2=13"});
  EXPECT_EQ(bits_of(big, "rat.tags"), 2 * bits_of(base, "rat.tags"));
  EXPECT_NEAR(big["structures"][0]["mm2"].get<double>(), 4 * base["structures"][0]["mm2"].get<double>(), 1e-12);
}

TEST(CliArea, TableFormatShowsTotalAndPaper) {
  const Result r = moehub({"area"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("rat.tags"), std::string::npos);
  EXPECT_NE(r.out.find("total"), std::string::npos);
  EXPECT_NE(r.out.find("paper VI-E: 0.49 mm^2 at 7 nm"), std::string::npos);
  EXPECT_NE(r.out.find("storage total"), std::string::npos);
  EXPECT_NE(r.out.find("aau.address"), std::string::npos);
  EXPECT_NE(r.out.find("logic total"), std::string::npos);
  EXPECT_NE(r.out.find("total: storage "), std::string::npos);
}

TEST(CliAreaBadInput, ZeroRatEntries) {
  expect_bad_input({"area", "--set", "hub.rat.entries=0"}, "hub.rat.entries: must be at least 1");
}
TEST(CliAreaBadInput, MoreBanksThanEntries) {
  expect_bad_input({"area", "--set", "hub.rat.entries=8"}, "hub.rat.banks: 16 banks for 8 entries");
}
TEST(CliAreaBadInput, GranuleNotDividingTheEntry) {
  expect_bad_input({"area", "--set", "hub.rpm.mask_granule_bytes=48B"}, "hub.rpm.mask_granule_bytes");
}
TEST(CliAreaBadInput, UnknownHubKey) { expect_bad_input({"area", "--set", "hub.rat.ways=4"}, "unknown key 'hub.rat.ways'"); }
TEST(CliAreaBadInput, UnknownFormat) { expect_bad_input({"area", "--format", "xml"}, "--format"); }
TEST(CliAreaBadInput, UnknownHardware) { expect_bad_input({"area", "--hardware", "dgx-z900"}, "run.hardware"); }
TEST(CliAreaBadInput, UtilizationAboveOne) {
  expect_bad_input({"area", "--set", "hub.area.logic_utilization=1.5"}, "hub.area.logic_utilization: must be at most 1");
}
TEST(CliAreaBadInput, NonPositiveCellArea) {
  expect_bad_input({"area", "--set", "hub.area.flip_flop_um2=0"}, "hub.area.flip_flop_um2: must be greater than 0");
}
TEST(CliAreaBadInput, NonPositiveDensity) {
  expect_bad_input({"area", "--set", "hub.area.sram_mbit_per_mm2=0"}, "hub.area.sram_mbit_per_mm2: must be greater than 0");
}

}  // namespace
