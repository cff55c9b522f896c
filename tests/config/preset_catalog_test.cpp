#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/preset_catalog.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

class PresetCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moehub-presets-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "hardware");
    write("hardware/base-board.toml", "description = \"A board\"\n[gpu]\nsm_count = 132\nname = \"X\"\n");
    write("hardware/cut-down.toml", "description = \"Fewer SMs\"\nbase = \"base-board\"\n[gpu]\nsm_count = 114\n");
    write("hardware/loop-a.toml", "base = \"loop-b\"\n");
    write("hardware/loop-b.toml", "base = \"loop-a\"\n");
    registry_.integer("gpu.sm_count", "SMs").at_least(1);
    registry_.string("gpu.name", "name");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }

  fs::path dir_;
  ParamRegistry registry_;
};

TEST_F(PresetCatalogTest, ListsPresetsWithDescriptionsSorted) {
  PresetCatalog cat(dir_);
  const auto list = cat.list(PresetKind::Hardware);
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].name, "base-board");
  EXPECT_EQ(list[0].description, "A board");
  EXPECT_TRUE(cat.list(PresetKind::Model).empty());
}

TEST_F(PresetCatalogTest, BaseChainsMergeInOrder) {
  PresetCatalog cat(dir_);
  Config c(registry_);
  cat.merge_preset(c, PresetKind::Hardware, cat.resolve(PresetKind::Hardware, "cut-down", "--hardware"));
  c.resolve();
  EXPECT_EQ(c.integer("gpu.sm_count"), 114);
  EXPECT_EQ(c.string("gpu.name"), "X");
}

TEST_F(PresetCatalogTest, UnknownPresetListsTheKnownOnes) {
  PresetCatalog cat(dir_);
  try {
    cat.resolve(PresetKind::Hardware, "dgx-z900", "--hardware");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "--hardware");
    EXPECT_NE(std::string(e.what()).find("base-board, cut-down"), std::string::npos);
  }
  EXPECT_THROW(cat.resolve(PresetKind::Hardware, "missing/file.toml", "--hardware"), UserError);
}

TEST_F(PresetCatalogTest, BaseCyclesAreErrors) {
  PresetCatalog cat(dir_);
  Config c(registry_);
  EXPECT_THROW(cat.merge_preset(c, PresetKind::Hardware, dir_ / "hardware/loop-a.toml"), UserError);
}

TEST(ShippedPresets, AllParse) {
  PresetCatalog cat(MOEHUB_SOURCE_CONFIG_DIR);
  EXPECT_FALSE(cat.list(PresetKind::Hardware).empty());
  EXPECT_FALSE(cat.list(PresetKind::Model).empty());
}

}  // namespace
}  // namespace moehub
