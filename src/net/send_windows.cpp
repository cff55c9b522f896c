#include "net/send_windows.h"

#include <algorithm>
#include <stdexcept>

namespace moehub {

SendWindows::SendWindows(const NetConfig& config)
    : cfg_(config),
      gpus_(static_cast<size_t>(std::max(config.gpus, 0))),
      nic_depth_(config.nic_send_queue_depth),
      nvlink_out_(gpus_ * kClasses, 0),
      nic_closed_(gpus_, 0),
      remote_(gpus_, 0),
      nvlink_waiting_(gpus_ * kClasses),
      nic_waiting_(gpus_) {
  const auto planes = static_cast<uint64_t>(cfg_.planes);
  nvlink_window_[0] = cfg_.egress_buffer_bytes + planes * cfg_.switch_buffer_bytes;
  nvlink_window_[1] = (1 + planes) * cfg_.response_buffer_bytes;
  if (cfg_.scale_out()) {
    nic_out_.assign(gpus_ * gpus_, 0);
    for (size_t s = 0; s < gpus_; ++s) {
      for (size_t d = 0; d < gpus_; ++d) remote_[s] += crosses(static_cast<int>(s), static_cast<int>(d)) ? 1 : 0;
    }
  }
}

uint64_t SendWindows::most_outstanding(const NetConfig& cfg) {
  if (cfg.gpus < 2) return 0;
  const auto planes = static_cast<uint64_t>(cfg.planes);
  const uint64_t smallest = static_cast<uint64_t>(cfg.wire_flits(0)) * cfg.flit_bytes;
  const uint64_t nvlink = (cfg.egress_buffer_bytes + planes * cfg.switch_buffer_bytes) / smallest + 1 +
                          (1 + planes) * cfg.response_buffer_bytes / smallest + 1;
  const auto gpus = static_cast<uint64_t>(cfg.gpus);
  const uint64_t node = cfg.scale_out() ? static_cast<uint64_t>(cfg.gpus_per_node) : gpus;
  uint64_t total = 0;
  for (uint64_t first = 0; first < gpus; first += node) {
    const uint64_t local = std::min(node, gpus - first);  // GPUs of this node
    const uint64_t remote = gpus - local;
    total += local * ((local > 1 ? nvlink : 0) + remote * cfg.nic_send_queue_depth);
  }
  return total;
}

bool SendWindows::can_send(int src, int dst, uint32_t payload_bytes, PacketKind kind) const {
  if (crosses(src, dst)) return nic_open(src, dst);
  return nvlink_open(src, cfg_.wire_flits(payload_bytes) * cfg_.flit_bytes, kind);
}

bool SendWindows::can_send_any(int src, uint32_t payload_bytes, PacketKind kind) const {
  const bool nvlink_peers = cfg_.gpus > 1 + static_cast<int>(remote_[static_cast<size_t>(src)]);
  if (nvlink_peers && nvlink_open(src, cfg_.wire_flits(payload_bytes) * cfg_.flit_bytes, kind)) return true;
  return nic_closed_[static_cast<size_t>(src)] < remote_[static_cast<size_t>(src)];
}

void SendWindows::accept(int src, int dst, uint32_t payload_bytes, PacketKind kind, uint32_t count) {
  if (crosses(src, dst)) {
    uint32_t& out = nic_out_[pair(src, dst)];
    if (out < nic_depth_ && out + count >= nic_depth_) ++nic_closed_[static_cast<size_t>(src)];
    out += count;
    return;
  }
  nvlink_out_[nvlink(src, kind)] += static_cast<uint64_t>(cfg_.wire_flits(payload_bytes)) * cfg_.flit_bytes * count;
}

void SendWindows::release(int src, int dst, uint32_t payload_bytes, PacketKind kind, uint32_t count) {
  if (crosses(src, dst)) {
    uint32_t& out = nic_out_[pair(src, dst)];
    if (out < count) throw std::logic_error("SendWindows::release: no NIC message outstanding");
    if (out >= nic_depth_ && out - count < nic_depth_) --nic_closed_[static_cast<size_t>(src)];
    out -= count;
    notify(nic_waiting_[static_cast<size_t>(src)], src);
    return;
  }
  uint64_t& out = nvlink_out_[nvlink(src, kind)];
  const uint64_t wire = static_cast<uint64_t>(cfg_.wire_flits(payload_bytes)) * cfg_.flit_bytes * count;
  if (out < wire) throw std::logic_error("SendWindows::release: more NVLink bytes than outstanding");
  out -= wire;
  notify(nvlink_waiting_[nvlink(src, kind)], src);
}

bool SendWindows::wait(int src, int dst, PacketKind kind, RoomListener* listener) {
  if (crosses(src, dst)) {
    if (nic_open(src, dst)) return false;
    add(nic_waiting_[static_cast<size_t>(src)], listener);
    return true;
  }
  if (nvlink_out_[nvlink(src, kind)] == 0) return false;
  add(nvlink_waiting_[nvlink(src, kind)], listener);
  return true;
}

bool SendWindows::idle() const {
  return std::all_of(nvlink_out_.begin(), nvlink_out_.end(), [](uint64_t b) { return b == 0; }) &&
         std::all_of(nic_out_.begin(), nic_out_.end(), [](uint32_t m) { return m == 0; });
}

void SendWindows::add(std::vector<RoomListener*>& list, RoomListener* l) {
  if (std::find(list.begin(), list.end(), l) == list.end()) list.push_back(l);
}

// Listeners may wait again from on_room: the list is swapped out before they are called.
void SendWindows::notify(std::vector<RoomListener*>& list, int src) {
  if (list.empty()) return;
  std::vector<RoomListener*> calling;
  calling.swap(list);
  for (RoomListener* l : calling) l->on_room(src);
}

}  // namespace moehub
