#pragma once
// Hand-built network configurations for the tests (every number visible in the test).

#include "net/net_config.h"
#include "sim/time.h"

namespace moehub::test {

// The DGX-H800 reading: 200 GB/s per direction per GPU over `planes` planes, 250 ns links,
// a 100 ns switch, 16 B flits, 1 header flit, 128 B packets, generous buffers, acks off.
inline NetConfig h800_like(int gpus, int planes = 4) {
  NetConfig c;
  c.gpus = gpus;
  c.planes = planes;
  c.links_per_gpu = 8;
  c.switch_ports = 64;
  c.gpu_bandwidth = Bandwidth::bytes_per_second(200'000'000'000ULL);
  c.gpu_switch_latency = Time::from_ns(250);
  c.switch_latency = Time::from_ns(100);
  c.flit_bytes = 16;
  c.max_payload_bytes = 128;
  c.header_flits = 1;
  c.egress_buffer_bytes = 8 * 1024;
  c.switch_buffer_bytes = 64 * 1024;
  c.ingress_buffer_bytes = 64 * 1024;
  c.response_buffer_bytes = 64 * 1024;
  c.write_ack = false;
  return c;
}

}  // namespace moehub::test
