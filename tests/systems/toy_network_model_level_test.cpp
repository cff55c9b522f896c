// The network seam: a network the simulator does not ship, written here against the Network
// interface alone, carries every system's layer without a change to any system.
// Model-level tests (numbers: timing, counts, statistics) split from toy_network_test.cpp: built and run without
// the sanitizers, whose tree runs the unit tests of the same code paths (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include "net/network.h"
#include "systems/system_run.h"
#include "systems/toy_network.h"

namespace moehub {
namespace {

using test::kToy;
using test::ToyNetwork;
using test::toy_of;

// The same system on the shipped fabric and on the toy takes different times: the layer is
// timed by whichever network is under it. (Mixtral at 1024 tokens: the verify shapes are so
// small that Megatron-TE's layer is bound by its host, whatever the network.)
TEST(ToyNetwork, TheLayerTimeDependsOnTheNetworkUnderIt) {
  const std::vector<std::string> tokens = {"run.tokens=1024"};
  test::SystemRun fabric("megatron-te", tokens, false, test::ConfigBase::Defaults);
  fabric.run();
  test::SystemRun toy("megatron-te", tokens, false, test::ConfigBase::Defaults, kToy);
  toy.run();
  EXPECT_GT(toy_of(*toy.cluster)->transfers(), 0u);
  EXPECT_NE(toy.layer(), fabric.layer());
}

}  // namespace
}  // namespace moehub
