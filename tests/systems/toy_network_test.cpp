// The network seam: a network the simulator does not ship, written here against the Network
// interface alone, carries every system's layer without a change to any system.

#include <gtest/gtest.h>

#include "net/network.h"
#include "systems/system_run.h"
#include "systems/toy_network.h"

namespace moehub {
namespace {

using test::kToy;
using test::ToyNetwork;
using test::toy_of;

class ToyNetworkRuns : public ::testing::TestWithParam<const char*> {};

TEST_P(ToyNetworkRuns, SystemFinishesItsLayerAndReproducesTheReference) {
  test::SystemRun run(GetParam(), {}, /*with_functional=*/true, test::ConfigBase::Verify, kToy);
  run.run();
  ASSERT_NE(toy_of(*run.cluster), nullptr);
  // Every system but the ideal layer moves rows between GPUs, so they crossed the toy's wires.
  if (std::string(GetParam()) != "ideal") {
    EXPECT_GT(toy_of(*run.cluster)->transfers(), 0u);
  }
  EXPECT_GT(run.layer(), Time::zero());
  EXPECT_TRUE(run.functional->passed()) << run.functional->report().dump();
}

INSTANTIATE_TEST_SUITE_P(EverySystem, ToyNetworkRuns,
                         ::testing::Values("ideal", "megatron-te", "fastermoe", "tutel", "comet", "ccfuser", "deepep",
                                           "mh-base", "mh-pkt", "mh-dep", "moehub"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace moehub
