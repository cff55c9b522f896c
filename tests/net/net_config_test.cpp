// NetConfig: packet format arithmetic, validation naming the key, and the DGX-H800 preset.

#include <gtest/gtest.h>

#include "config/config_builder.h"
#include "systems/param_catalog.h"
#include "net/net_config.h"
#include "net/net_test_util.h"
#include "sim/error.h"

namespace moehub {
namespace {

void expect_user_error(const NetConfig& c, const std::string& where, const std::string& fragment) {
  try {
    c.validate();
    FAIL() << "expected UserError at " << where;
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), where);
    EXPECT_NE(e.reason().find(fragment), std::string::npos) << e.reason();
  }
}

TEST(NetConfig, WireFlitsAreCeilPayloadOverFlitPlusHeader) {
  const NetConfig c = test::h800_like(8);
  EXPECT_EQ(c.wire_flits(0), 1u);    // an ack: header only
  EXPECT_EQ(c.wire_flits(1), 2u);    // a partly filled flit costs a whole flit
  EXPECT_EQ(c.wire_flits(16), 2u);
  EXPECT_EQ(c.wire_flits(17), 3u);
  EXPECT_EQ(c.wire_flits(128), 9u);  // 8 data flits + 1 header = 144 B
  EXPECT_EQ(c.wire_bytes(128 * 10 + 20), 10u * 144 + 3 * 16);
  EXPECT_EQ(c.packets_for(1), 1u);
  EXPECT_EQ(c.packets_for(257), 3u);
  EXPECT_EQ(c.plane_bandwidth().bytes_per_second(), 50'000'000'000ULL);
  // 144 B at 50 GB/s = 2880 ps, twice, plus 250 + 100 + 250 ns.
  EXPECT_EQ(c.unloaded_packet_latency(128).ps(), 2880 + 250000 + 100000 + 2880 + 250000);
}

TEST(NetConfig, RejectsZeroBandwidth) {
  NetConfig c = test::h800_like(8);
  c.gpu_bandwidth = Bandwidth::bytes_per_second(0);
  expect_user_error(c, "net.link_bandwidth", "greater than 0");
  c.gpu_bandwidth = Bandwidth::bytes_per_second(3);  // 3 B/s over 4 planes: nothing per plane
  expect_user_error(c, "net.link_bandwidth", "0 B/s per plane");
}

TEST(NetConfig, RejectsZeroOrTooSmallBuffers) {
  NetConfig c = test::h800_like(8);
  c.switch_buffer_bytes = 0;
  expect_user_error(c, "net.switch_buffer", "at least 144B");
  c = test::h800_like(8);
  c.egress_buffer_bytes = 143;
  expect_user_error(c, "net.egress_buffer", "at least 144B");
  c = test::h800_like(8);
  c.ingress_buffer_bytes = 0;
  expect_user_error(c, "net.ingress_buffer", "one largest packet");
  c = test::h800_like(8);
  c.response_buffer_bytes = 0;
  expect_user_error(c, "net.response_buffer", "read response");
}

TEST(NetConfig, RejectsWiringThatCannotBeBuilt) {
  NetConfig c = test::h800_like(8, 3);  // 8 links over 3 planes
  expect_user_error(c, "net.switch_planes", "cannot be spread evenly over 3 planes");
  c = test::h800_like(33, 4);  // 33 GPUs x 2 links = 66 ports > 64
  expect_user_error(c, "run.gpus", "need 66 ports on each switch, which has 64");
  c = test::h800_like(32, 4);
  EXPECT_NO_THROW(c.validate());
  c.gpus = 0;
  expect_user_error(c, "run.gpus", "at least 1 GPU");
}

TEST(NetConfig, FromTheDgxH800PresetReadsPerDirectionBandwidth) {
  const ParamRegistry registry = build_param_registry();
  const PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  const Config config = build_config(catalog, registry, ConfigRequest{});
  const NetConfig c = NetConfig::from(config, static_cast<int>(config.integer("run.gpus")));
  EXPECT_EQ(c.gpus, 8);
  EXPECT_EQ(c.planes, 4);
  EXPECT_EQ(c.gpu_bandwidth.bytes_per_second(), 200'000'000'000ULL);  // 400 GB/s bidirectional
  EXPECT_EQ(c.gpu_switch_latency, Time::from_ns(250));
  EXPECT_EQ(c.wire_flits(c.max_payload_bytes), 9u);
  EXPECT_TRUE(c.write_ack);
  EXPECT_EQ(c.fidelity, NetFidelity::Packet);
}

TEST(NetConfig, FromConfigRejectsBadPresetValues) {
  const ParamRegistry registry = build_param_registry();
  const PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
  ConfigRequest req;
  req.assignments = {"net.switch_buffer=0B"};
  const Config config = build_config(catalog, registry, req);
  EXPECT_THROW(NetConfig::from(config, 8), UserError);
  try {
    NetConfig::from(config, 8);
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "net.switch_buffer");
  }
}

}  // namespace
}  // namespace moehub
