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

namespace moehub::test {

// h800_like joined by a small fat tree, every number chosen to make hand sums short: nodes of
// `per_node` GPUs; 64 GB/s PCIe and 50 GB/s NICs, 300 ns each one way; 4 KiB MTU with 26 B of
// headers; 8-port switches (4 NICs and 4 spines per leaf when non-blocking), 50 ns cables,
// 150 ns switches; 1 G packets/s per NIC (never the bottleneck for 4 KiB packets); flow fidelity.
inline NetConfig cluster_like(int gpus, int per_node, int oversubscription = 1) {
  NetConfig c = h800_like(gpus);
  c.gpus_per_node = per_node;
  c.pcie_bandwidth = Bandwidth::bytes_per_second(64'000'000'000ULL);
  c.pcie_latency = Time::from_ns(300);
  c.nic_bandwidth = Bandwidth::bytes_per_second(50'000'000'000ULL);
  c.nic_latency = Time::from_ns(300);
  c.nic_message_rate = 1e9;
  c.rdma_mtu_bytes = 4096;
  c.rdma_header_bytes = 26;
  c.fabric_switch_ports = 8;
  c.fabric_oversubscription = oversubscription;
  c.fabric_link_bandwidth = Bandwidth::bytes_per_second(50'000'000'000ULL);
  c.fabric_cable_latency = Time::from_ns(50);
  c.fabric_switch_latency = Time::from_ns(150);
  c.fidelity = NetFidelity::Flow;
  return c;
}

}  // namespace moehub::test
