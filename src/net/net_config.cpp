#include "net/net_config.h"

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/units.h"

namespace moehub {

NetConfig NetConfig::from(const Config& c, int gpus) {
  NetConfig n;
  n.gpus = gpus;
  n.planes = static_cast<int>(c.integer("net.switch_planes"));
  n.links_per_gpu = static_cast<int>(c.integer("net.links_per_gpu"));
  n.switch_ports = static_cast<int>(c.integer("net.switch_ports"));
  n.gpu_bandwidth = c.bandwidth("net.link_bandwidth");
  n.gpu_switch_latency = c.time("net.gpu_switch_latency");
  n.switch_latency = c.time("net.switch_latency");
  n.flit_bytes = static_cast<uint32_t>(c.bytes("net.flit_bytes"));
  n.max_payload_bytes = static_cast<uint32_t>(c.bytes("net.max_payload_bytes"));
  n.header_flits = c.integer_u32("net.header_flits");
  n.egress_buffer_bytes = c.bytes("net.egress_buffer");
  n.switch_buffer_bytes = c.bytes("net.switch_buffer");
  n.ingress_buffer_bytes = c.bytes("net.ingress_buffer");
  n.response_buffer_bytes = c.bytes("net.response_buffer");
  n.write_ack = c.boolean("net.write_ack");
  n.fidelity = c.string("net.fidelity") == "flow" ? NetFidelity::Flow : NetFidelity::Packet;
  n.validate();
  return n;
}

void NetConfig::validate() const {
  if (gpus < 1) throw UserError("run.gpus", "the network needs at least 1 GPU");
  if (planes < 1) throw UserError("net.switch_planes", "must be at least 1");
  if (gpu_bandwidth.bytes_per_second() == 0) throw UserError("net.link_bandwidth", "must be greater than 0");
  if (plane_bandwidth().bytes_per_second() == 0) {
    throw UserError("net.link_bandwidth", fmt::format("{} split over {} planes leaves 0 B/s per plane",
                                                      format_bandwidth(gpu_bandwidth), planes));
  }
  if (gpu_switch_latency < Time::zero()) throw UserError("net.gpu_switch_latency", "must not be negative");
  if (switch_latency < Time::zero()) throw UserError("net.switch_latency", "must not be negative");
  if (flit_bytes == 0) throw UserError("net.flit_bytes", "must be greater than 0");
  if (max_payload_bytes == 0) throw UserError("net.max_payload_bytes", "must be greater than 0");
  if (wire_flits(0) == 0) throw UserError("net.header_flits", "a header-only packet (an ack) would have no flits");
  if (links_per_gpu % planes != 0) {
    throw UserError("net.switch_planes", fmt::format("{} links per GPU (net.links_per_gpu) cannot be spread evenly over {} planes",
                                                     links_per_gpu, planes));
  }
  const int64_t ports = static_cast<int64_t>(gpus) * (links_per_gpu / planes);
  if (ports > switch_ports) {
    throw UserError("run.gpus", fmt::format("{} GPUs x {} links per plane need {} ports on each switch, which has {} "
                                            "(net.switch_ports)",
                                            gpus, links_per_gpu / planes, ports, switch_ports));
  }
  const uint64_t largest = static_cast<uint64_t>(wire_flits(max_payload_bytes)) * flit_bytes;
  const auto check = [&](const char* key, uint64_t bytes, uint64_t need, const char* what) {
    if (bytes < need) {
      throw UserError(key, fmt::format("{} must hold at least {} ({}), got {}", "buffer", format_bytes(need), what,
                                       format_bytes(bytes)));
    }
  };
  check("net.egress_buffer", egress_buffer_bytes, largest, "one largest packet");
  check("net.switch_buffer", switch_buffer_bytes, largest, "one largest packet");
  check("net.ingress_buffer", ingress_buffer_bytes, largest, "one largest packet");
  check("net.response_buffer", response_buffer_bytes, largest, "one largest packet, e.g. a read response");
}

uint64_t NetConfig::wire_bytes(uint64_t payload) const {
  const uint64_t full = payload / max_payload_bytes;
  const uint32_t rest = static_cast<uint32_t>(payload % max_payload_bytes);
  uint64_t flits = full * wire_flits(max_payload_bytes);
  if (rest) flits += wire_flits(rest);
  return flits * flit_bytes;
}

Time NetConfig::unloaded_packet_latency(uint32_t payload_bytes) const {
  const Time ser = plane_bandwidth().transfer_time(static_cast<uint64_t>(wire_flits(payload_bytes)) * flit_bytes);
  return ser + gpu_switch_latency + switch_latency + ser + gpu_switch_latency;
}

}  // namespace moehub
