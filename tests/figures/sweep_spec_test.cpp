// [[sweep.where]]: settings for the points whose coordinates match (the scale figure's redundant
// experts where a model's experts do not cover the GPUs), [[sweep.variant]]: a registered system
// with settings of its own as a series (DeepEP's low-latency kernels), and the errors bad ones get.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "figures/figure_data.h"
#include "figures/sweep_file.h"
#include "sim/error.h"

namespace moehub {
namespace {

namespace fs = std::filesystem;

class SweepWhereTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moehub-sweep-where-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& text) const {
    const fs::path file = dir_ / "w.toml";
    std::ofstream(file) << text;
    return file;
  }
  // The message of the UserError that loading `text` throws ("" if it loads).
  std::string error_of(const std::string& text) const {
    try {
      load_sweep_file(write(text));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

// The settings a point has after its axis values (model, gpus, tokens, imbalance: 4 of them).
std::vector<std::string> extra_settings(const SweepPoint& p) {
  std::vector<std::string> out;
  for (size_t i = 4; i < p.settings.size(); ++i) out.push_back(p.settings[i].path + "=" + p.settings[i].text);
  return out;
}

constexpr const char* kHead = R"([sweep]
models = ["deepseek-v3", "qwen3-235b-a22b"]
gpus = [256, 512]
seq_lengths = [16]
imbalance = [0.032]
systems = ["ideal"]
set = ["run.seed=3"]
)";

TEST_F(SweepWhereTest, AWhereSetsOnlyThePointsItsCoordinatesMatch) {
  const SweepFile s = load_sweep_file(write(std::string(kHead) + R"(
[[sweep.where]]
model = "deepseek-v3"
gpus = 512
set = ["workload.redundant_experts=256"]

[[sweep.where]]
model = ["qwen3-235b-a22b"]
gpus = [256, 512]
set = ["workload.redundant_experts=128"]

[[sweep.where]]
imbalance = 0.032              # the axis's text is 0.032000000000000001: compared as numbers
set = ["hub.rat.entries=64"]

[sweep.quick]
gpus = [256]
)"));
  const std::vector<SweepPoint> full = s.points(false);
  ASSERT_EQ(full.size(), 4u);  // (deepseek, 256), (deepseek, 512), (qwen, 256), (qwen, 512)
  using V = std::vector<std::string>;
  EXPECT_EQ(extra_settings(full[0]), (V{"run.seed=3", "hub.rat.entries=64"}));
  EXPECT_EQ(extra_settings(full[1]), (V{"run.seed=3", "workload.redundant_experts=256", "hub.rat.entries=64"}));
  EXPECT_EQ(extra_settings(full[2]), (V{"run.seed=3", "workload.redundant_experts=128", "hub.rat.entries=64"}));
  EXPECT_EQ(extra_settings(full[3]), (V{"run.seed=3", "workload.redundant_experts=128", "hub.rat.entries=64"}));
  EXPECT_NE(full[1].settings[5].origin.find("w.toml:12"), std::string::npos) << full[1].settings[5].origin;
  // The quick subset keeps the wheres; 512 GPUs are not in it.
  const std::vector<SweepPoint> quick = s.points(true);
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(extra_settings(quick[0]), (V{"run.seed=3", "hub.rat.entries=64"}));
  EXPECT_EQ(extra_settings(quick[1]), (V{"run.seed=3", "workload.redundant_experts=128", "hub.rat.entries=64"}));
}

TEST_F(SweepWhereTest, ABadWhereNamesItsLineAndWhatIsWrong) {
  const std::string head(kHead);
  EXPECT_NE(error_of(head + "[[sweep.where]]\nhardware = \"h800-cluster\"\nset = [\"hub.rat.entries=64\"]\n")
                .find("w.toml:8: sweep.where: 'hardware' is not a coordinate of the sweep (coordinates: model, gpus, "
                      "seq_length, imbalance)"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[[sweep.where]]\ngpus = 512\nset = [\"run.tokens=64\"]\n")
                .find(":10: sweep.where: set 'run.tokens' with sweep.tokens"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[[sweep.where]]\ngpus = 512\n").find(":8: sweep.where[0]: missing 'set'"), std::string::npos);
  EXPECT_NE(error_of(head + "[[sweep.where]]\nset = [\"hub.rat.entries=64\"]\n")
                .find(":8: sweep.where[0]: no coordinate to match (sweep.set applies to every point)"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[sweep.axes]\n\"hub.rat.entries\" = [64, 128]\n[[sweep.where]]\ngpus = 512\n"
                            "set = [\"hub.rat.entries=64\"]\n")
                .find(":12: sweep.where: 'hub.rat.entries' is a swept axis; a where may not set it"),
            std::string::npos);
}

constexpr const char* kVariant = R"(
[[sweep.variant]]
name = "deepep-ll"
system = "deepep"
set = ["systems.deepep.mode=low-latency", "systems.deepep.ll_max_dispatch_tokens_per_rank=64"]

[[sweep.where]]
gpus = 512
set = ["workload.redundant_experts=256"]
)";

TEST_F(SweepWhereTest, AVariantRunsItsSystemWithItsSettingsAfterThePointsOwn) {
  std::string text(kHead);
  text.replace(text.find("systems = [\"ideal\"]"), 19, "systems = [\"deepep\", \"deepep-ll\"]");
  const SweepFile s = load_sweep_file(write(text + kVariant));
  require_registered_systems(s);  // deepep-ll is a variant of a registered system
  std::vector<RunRequest> requests;
  std::vector<RunIndex> at;
  const FigureRuns runs = arrange_runs(nullptr, s.sweep, s.points(false), requests, at);
  EXPECT_EQ(runs.systems, (std::vector<std::string>{"deepep", "deepep-ll"}));  // the series keep the names
  ASSERT_EQ(requests.size(), 8u);  // 4 points x 2
  using V = std::vector<std::string>;
  // (deepseek-v3, 512 GPUs): the plain system gets the point's settings, the variant its own after them.
  EXPECT_EQ(requests[2].system, "deepep");
  EXPECT_EQ(extra_settings(requests[2].point), (V{"run.seed=3", "workload.redundant_experts=256"}));
  EXPECT_EQ(requests[3].system, "deepep");
  EXPECT_EQ(at[3].point, 1u);
  EXPECT_EQ(at[3].system, 1u);
  EXPECT_EQ(extra_settings(requests[3].point),
            (V{"run.seed=3", "workload.redundant_experts=256", "systems.deepep.mode=low-latency",
               "systems.deepep.ll_max_dispatch_tokens_per_rank=64"}));
  EXPECT_NE(requests[3].point.settings.back().origin.find("w.toml:12"), std::string::npos);
  EXPECT_EQ(requests[3].point.label(), "deepseek-v3 512 GPUs 8192 tokens std 0.032 variant=deepep-ll");
  EXPECT_EQ(requests[2].point.label(), "deepseek-v3 512 GPUs 8192 tokens std 0.032");
  // The points the figure keeps (its CSV's coordinates) are the sweep's, without the variant.
  EXPECT_EQ(runs.points[1].label(), requests[2].point.label());
}

TEST_F(SweepWhereTest, ABadVariantNamesItsLineAndWhatIsWrong) {
  const std::string head(kHead);
  const auto variant = [](const std::string& name, const std::string& system, const std::string& set) {
    return "[[sweep.variant]]\nname = \"" + name + "\"\nsystem = \"" + system + "\"\n" + set;
  };
  const std::string ll = "set = [\"systems.deepep.mode=low-latency\"]\n";
  EXPECT_NE(error_of(head + variant("deepep-ll", "deepep", "")).find(":8: sweep.variant[0]: missing 'set'"),
            std::string::npos);
  EXPECT_NE(error_of(head + variant("ll", "deepep", ll) + variant("ll", "deepep", ll))
                .find(":12: sweep.variant[1]: variant 'll' named twice"),
            std::string::npos);
  EXPECT_NE(error_of(head + variant("ll", "deepep", "set = [\"run.gpus=8\"]\n"))
                .find(":11: sweep.variant: set 'run.gpus' with sweep.gpus"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[sweep.axes]\n\"hub.rat.entries\" = [64]\n" +
                     variant("ll", "deepep", "set = [\"hub.rat.entries=8\"]\n"))
                .find("sweep.variant: 'hub.rat.entries' is a swept axis; a variant may not set it"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[[sweep.variant]]\nname = \"ll\"\nsystem = \"deepep\"\nmode = 1\n" + ll)
                .find("sweep.variant[0]"),
            std::string::npos);
  // Names: checked against the registry.
  const auto registry_error = [&](const std::string& text) -> std::string {
    try {
      require_registered_systems(load_sweep_file(write(text)));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(registry_error(head + variant("deepep", "deepep", ll)).find("w.toml:8: variant 'deepep' takes a registered system's name"),
            std::string::npos);
  EXPECT_NE(registry_error(head + variant("ll", "deepepp", ll)).find("w.toml:8: variant 'll': unknown system 'deepepp' (known: "),
            std::string::npos);
  std::string unknown = head;
  unknown.replace(unknown.find("systems = [\"ideal\"]"), 19, "systems = [\"ideal\", \"ll\"]");
  EXPECT_NE(registry_error(unknown).find("sweep.systems: unknown system 'll'"), std::string::npos);
  EXPECT_EQ(registry_error(unknown + variant("ll", "deepep", ll)), "");
}

}  // namespace
}  // namespace moehub
