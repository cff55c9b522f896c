#pragma once
// Shared by the collectives unit and model-level tests.

#include <gtest/gtest.h>

#include "net/collectives.h"
#include "net/net_test_util.h"
#include "net/network.h"
#include "sim/simulator.h"

namespace moehub::test {

inline NetConfig h800_with_acks() {
  NetConfig c = test::h800_like(8);
  c.write_ack = true;
  c.switch_buffer_bytes = 32 * 1024;
  c.ingress_buffer_bytes = 32 * 1024;
  c.response_buffer_bytes = 32 * 1024;
  c.switch_latency = Time::zero();
  return c;
}

// Achieved payload rate per sender (GB/s) of a uniform 8-GPU all-to-all.
inline double alltoall_gbps(NetFidelity fidelity, uint64_t bytes_per_gpu) {
  Simulator sim;
  NetConfig c = h800_with_acks();
  c.fidelity = fidelity;
  auto net = make_network(c, sim);
  AllToAll a2a(*net, sim, NcclConfig{});
  bool done = false;
  a2a.start(AllToAll::uniform(8, bytes_per_gpu), 0, [&] { done = true; });
  sim.run();
  EXPECT_TRUE(done);
  EXPECT_TRUE(a2a.finished());
  return static_cast<double>(bytes_per_gpu) / a2a.finish_time().seconds() / 1e9;
}

// Every GPU's links carry its data (144 B per 128 B) and the acks of what it receives (16 B
// per 128 B): 200 GB/s x 128/160 = 160 GB/s of payload at best.
constexpr double kCeilingGBps = 200.0 * 128 / 160;
}  // namespace moehub::test
