#include "net/scaleout_packet.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

namespace moehub {

ScaleOutPackets::ScaleOutPackets(const NetConfig& config, Simulator& sim, TraceRecorder* trace)
    : cfg_(config),
      sim_(sim),
      trace_(trace),
      topo_(config),
      windows_(config),
      nics_(config.gpus),
      qps_(config.gpus),
      receivers_(config.gpus, nullptr),
      refused_(config.gpus) {
  if (!cfg_.scale_out()) throw std::logic_error("ScaleOutPackets: no scale-out fabric in this configuration");
  // The message engine's rate is a parameter in packets per second; its period is taken once,
  // rounded up to whole picoseconds (330e6/s: 3031 ps).
  per_packet_ = Time::from_ps(static_cast<int64_t>(std::ceil(1e12 / cfg_.nic_message_rate)));
  const uint64_t mtu_wire = cfg_.rdma_wire_bytes(cfg_.rdma_mtu_bytes);
  const Time delay = cfg_.pcie_latency + cfg_.nic_latency;
  pipeline_ = static_cast<uint64_t>(static_cast<unsigned __int128>(cfg_.nic_bandwidth.bytes_per_second()) *
                                    static_cast<uint64_t>(delay.ps()) / 1000000000000ULL) +
              mtu_wire;
  coalesce_ = cfg_.nic_bandwidth.transfer_time(mtu_wire);
  using K = FabricTopology::Kind;
  links_.resize(topo_.links().size());
  for (size_t i = 0; i < links_.size(); ++i) {
    Link& l = links_[i];
    const K kind = topo_.links()[i].kind;
    l.payload_only = kind == K::PcieUp || kind == K::PcieDown;
    l.credited = cfg_.fabric_port_buffer_bytes > 0 &&
                 (kind == K::NicTx || kind == K::LeafToSpine || kind == K::SpineToLeaf || kind == K::NicRx);
    l.room = l.credited ? cfg_.fabric_port_buffer_bytes : 0;
    l.rate = l.payload_only                                          ? cfg_.pcie_bandwidth
             : (kind == K::LeafToSpine || kind == K::SpineToLeaf) ? cfg_.fabric_link_bandwidth
                                                                    : cfg_.nic_bandwidth;
    // The latency from a packet's start on this link to its head's arrival at the next.
    switch (kind) {
      case K::PcieUp: l.after = cfg_.pcie_latency + cfg_.nic_latency; break;
      case K::PcieDown: l.after = cfg_.pcie_latency; break;
      case K::NicRx: l.after = cfg_.fabric_cable_latency + cfg_.nic_latency; break;
      case K::NicTx:
      case K::LeafToSpine:
      case K::SpineToLeaf: l.after = cfg_.fabric_cable_latency + cfg_.fabric_switch_latency; break;
      case K::NicMessages: break;  // the message engine: its stats only
    }
  }
  if (trace_) {
    for (int l = 0; l < topo_.leaves(); ++l) trace_->name_process(cfg_.gpus + l, fmt::format("leaf {}", l));
  }
}

// ---------------------------------------------------------------- pool and queues

uint32_t ScaleOutPackets::alloc() {
  if (!free_.empty()) {
    const uint32_t id = free_.back();
    free_.pop_back();
    pool_[id] = Flight{};
    return id;
  }
  pool_.emplace_back();
  return static_cast<uint32_t>(pool_.size() - 1);
}

void ScaleOutPackets::free_slot(uint32_t id) { free_.push_back(id); }

void ScaleOutPackets::push(Queue& q, uint32_t id) {
  pool_[id].next = kNil;
  if (q.tail == kNil) {
    q.head = id;
  } else {
    pool_[q.tail].next = id;
  }
  q.tail = id;
}

uint32_t ScaleOutPackets::pop(Queue& q) {
  const uint32_t id = q.head;
  q.head = pool_[id].next;
  if (q.head == kNil) q.tail = kNil;
  pool_[id].next = kNil;
  return id;
}

// ---------------------------------------------------------------- the source NIC

bool ScaleOutPackets::can_send_any(int src) const { return windows_.nic_any_open(src); }

void ScaleOutPackets::wait_room(int src, int dst, RoomListener* listener) {
  if (windows_.wait(src, dst, PacketKind::Write, listener)) return;
  sim_.schedule_in(Time::zero(), [src, listener] { listener->on_room(src); });
}

void ScaleOutPackets::send(Packet&& packet) {
  if (packet.payload_bytes > cfg_.rdma_mtu_bytes) throw std::logic_error("ScaleOutPackets::send: payload above net.rdma_mtu_bytes");
  WorkRequest wr;
  wr.windowed = traffic_class(packet.kind) == TrafficClass::Request;
  if (wr.windowed) windows_.accept(packet.src, packet.dst, packet.payload_bytes, packet.kind);
  wr.bytes = packet.payload_bytes;
  wr.packet_payload = packet.payload_bytes;
  const int src = packet.src;
  const int dst = packet.dst;
  wr.packet = std::move(packet);
  enqueue_work(src, dst, std::move(wr));
}

void ScaleOutPackets::transfer(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                               Callback on_complete) {
  if (options.complete_on_ack && !cfg_.write_ack) throw std::logic_error("transfer: completion on acks needs net.write_ack");
  const uint32_t id = transfers_.acquire();
  const uint32_t mtu = cfg_.rdma_mtu_bytes;
  const uint32_t payload = options.packet_payload ? std::min(options.packet_payload, mtu) : mtu;
  Transfer& t = transfers_.at(id);
  t.bytes = bytes;
  t.done = 0;
  t.packet_payload = payload;
  t.complete_on_ack = options.complete_on_ack;
  t.on_complete = std::move(on_complete);
  WorkRequest wr;
  wr.bytes = bytes;
  wr.packet_payload = payload;
  wr.transfer = id;
  wr.packet.src = src;
  wr.packet.dst = dst;
  wr.packet.kind = options.kind;
  wr.packet.priority = static_cast<uint8_t>(std::clamp(priority, 0, 255));
  wr.packet.cookie = id;
  wr.packet.client = this;
  wr.packet.ack_awaited = options.complete_on_ack;
  enqueue_work(src, dst, std::move(wr));
}

void ScaleOutPackets::enqueue_work(int src, int dst, WorkRequest&& wr) {
  ++rdma_messages_;
  std::deque<WorkRequest>& qp = qps_(src, dst);
  qp.push_back(std::move(wr));
  if (qp.size() == 1) nics_[src].active.push_back(dst);
  pump_source(src);
}

// The NIC fetches packets over PCIe, one queue pair after another, while its read pipeline
// has room (an empty pipeline takes any packet).
void ScaleOutPackets::pump_source(int gpu) {
  Nic& n = nics_[gpu];
  while (!n.active.empty()) {
    if (n.next >= n.active.size()) n.next = 0;
    const int dst = n.active[n.next];
    std::deque<WorkRequest>& qp = qps_(gpu, dst);
    WorkRequest& wr = qp.front();
    const uint64_t payload = std::min<uint64_t>(wr.packet_payload, wr.bytes - wr.cut);
    if (n.fetched > 0 && n.fetched + payload + cfg_.rdma_header_bytes > pipeline_) return;
    cut_packet(gpu, dst, wr);
    if (wr.transfer == kNil || wr.cut == wr.bytes) {
      qp.pop_front();
      if (qp.empty()) {
        n.active.erase(n.active.begin() + static_cast<std::ptrdiff_t>(n.next));
        continue;
      }
    }
    ++n.next;
  }
}

void ScaleOutPackets::cut_packet(int src, int dst, WorkRequest& wr) {
  const uint32_t id = alloc();
  Flight& f = pool_[id];
  if (wr.transfer == kNil) {
    f.pkt = std::move(wr.packet);
    f.windowed = wr.windowed;
  } else {
    f.pkt = wr.packet;
    f.pkt.payload_bytes = static_cast<uint32_t>(std::min<uint64_t>(wr.packet_payload, wr.bytes - wr.cut));
    wr.cut += f.pkt.payload_bytes;
  }
  f.wire = f.pkt.payload_bytes + cfg_.rdma_header_bytes;
  // The route without the message engine (first): PCIe up, NIC port, [leaf-spine, spine-leaf],
  // far NIC port, PCIe down.
  const FabricTopology::Route r = topo_.route(src, dst);
  f.hops = static_cast<uint8_t>(r.links.size() - 1);
  std::copy(r.links.begin() + 1, r.links.end(), f.links);
  nics_[src].fetched += f.wire;
  ++injected_;
  ++rdma_packets_;
  rdma_payload_bytes_ += f.pkt.payload_bytes;
  const Time now = sim_.now();
  forward(id, now, now);
}

// ---------------------------------------------------------------- links

void ScaleOutPackets::forward(uint32_t id, Time head, Time tail) {
  Flight& f = pool_[id];
  if (f.hop == f.hops) {
    // An ack ends at the NIC: it leaves the NIC's receive buffer as it arrives.
    if (f.hops > 0) return_credit(f.links[f.hops - 1], f.wire, tail);
    // The tail has arrived (an ack's, at the NIC: the sender hears of it across PCIe).
    const Time at = f.pkt.kind == PacketKind::Ack ? tail + cfg_.pcie_latency : tail;
    sim_.schedule_at(at, [this, id] { on_arrival(id); });
    return;
  }
  f.ready_ps = head.ps();
  f.tail_ps = tail.ps();
  const uint32_t link = f.links[f.hop];
  Link& l = links_[link];
  const bool was_empty = l.q.empty();
  push(l.q, id);
  if (was_empty) schedule_link(link, max(head, l.busy_until));
}

void ScaleOutPackets::schedule_link(uint32_t link, Time at) {
  Link& l = links_[link];
  at = max(at, sim_.now());
  if (at.ps() >= l.wake_at) return;
  l.wake_at = at.ps();
  sim_.schedule_at(at, [this, link] { on_link(link); });
}

// Starts every packet at the head of the link's FIFO that may start now: its head has arrived,
// the link is free and, on a NIC port, the message engine has taken the packet before.
void ScaleOutPackets::on_link(uint32_t link) {
  Link& l = links_[link];
  const Time now = sim_.now();
  if (now.ps() >= l.wake_at) l.wake_at = INT64_MAX;
  const FabricTopology::Link& where = topo_.links()[link];
  const bool port = where.kind == FabricTopology::Kind::NicTx;
  const int owner = where.a;
  while (!l.q.empty()) {
    const Flight& head = pool_[l.q.head];
    const bool data = port && head.pkt.kind != PacketKind::Ack;
    Time start = max(Time::from_ps(head.ready_ps), l.busy_until);
    if (data) start = max(start, nics_[owner].engine_free);
    if (start > now) {
      schedule_link(link, start);
      return;
    }
    if (l.credited && l.room < head.wire) {  // return_credit wakes the link
      if (!l.starved) {
        l.starved = true;
        l.starved_since = now;
        ++credit_stalls_;
      }
      return;
    }
    const uint32_t id = pop(l.q);
    Flight& f = pool_[id];
    const uint32_t bytes = l.payload_only ? f.pkt.payload_bytes : f.wire;
    const Time end = max(now + l.rate.transfer_time(bytes), Time::from_ps(f.tail_ps));
    l.busy_until = end;
    if (l.credited) l.room -= f.wire;
    if (f.hop > 0) return_credit(f.links[f.hop - 1], f.wire, end);
    l.stats.record_send(now, end - now, bytes, f.pkt.payload_bytes);
    if (trace_) l.stats.trace_busy(trace_, link_pid(link), trace_->track(link_pid(link), link_track(link)), now, end, coalesce_);
    ++f.hop;
    if (data) {
      Nic& n = nics_[owner];
      n.engine_free = now + per_packet_;
      n.fetched -= f.wire;
      const uint32_t engine = link + 2;  // NicTx, NicRx, NicMessages of one GPU (FabricTopology)
      links_[engine].stats.record_send(now, per_packet_, 0, 0);
    }
    forward(id, now + l.after, end + l.after);
    if (data) pump_source(owner);
  }
}

void ScaleOutPackets::return_credit(uint32_t link, uint32_t bytes, Time left) {
  if (!links_[link].credited) return;
  sim_.schedule_at(left + cfg_.fabric_cable_latency, [this, link, bytes] {
    Link& l = links_[link];
    l.room += bytes;
    if (!l.starved) return;
    l.starved = false;
    credit_wait_ += sim_.now() - l.starved_since;
    schedule_link(link, sim_.now());
  });
}

// ---------------------------------------------------------------- the destination

void ScaleOutPackets::on_arrival(uint32_t id) {
  const Packet& p = pool_[id].pkt;
  if (p.kind == PacketKind::Ack) {
    Packet ack = std::move(pool_[id].pkt);
    free_slot(id);
    ++delivered_;
    ++acks_;
    if (ack.client) ack.client->on_ack(ack);
    return;
  }
  const int dst = p.dst;
  if (traffic_class(p.kind) == TrafficClass::Request) {
    PacketReceiver* r = receivers_[dst];
    if (!refused_[dst].empty() || (r && !r->can_accept(p))) {
      refused_[dst].push_back(id);
      return;
    }
  }
  deliver(id);
}

void ScaleOutPackets::deliver(uint32_t id) {
  const bool windowed = pool_[id].windowed;
  Packet p = std::move(pool_[id].pkt);
  free_slot(id);
  ++delivered_;
  if (cfg_.write_ack && is_write(p.kind)) send_ack(p, sim_.now());
  const int src = p.src;
  const int dst = p.dst;
  const uint32_t bytes = p.payload_bytes;
  const PacketKind kind = p.kind;
  if (p.client) p.client->on_delivered(p);
  if (receivers_[dst]) receivers_[dst]->deliver(std::move(p));
  if (windowed) windows_.release(src, dst, bytes, kind);
}

// The ack leaves the far NIC's port when the write has landed and crosses back to the
// sender's NIC port: a header-only packet, no message engine, no PCIe.
void ScaleOutPackets::send_ack(const Packet& p, Time at) {
  const uint32_t id = alloc();
  Flight& f = pool_[id];
  f.pkt.src = p.dst;
  f.pkt.dst = p.src;
  f.pkt.payload_bytes = 0;
  f.pkt.kind = PacketKind::Ack;
  f.pkt.priority = p.priority;
  f.pkt.cookie = p.cookie;
  f.pkt.client = p.client;
  f.pkt.ack_awaited = p.ack_awaited;
  f.wire = cfg_.rdma_header_bytes;
  const FabricTopology::Route r = topo_.route(p.dst, p.src);
  // Skip the engine and PCIe up (first two), and PCIe down (last).
  f.hops = static_cast<uint8_t>(r.links.size() - 3);
  std::copy(r.links.begin() + 2, r.links.end() - 1, f.links);
  ++injected_;
  forward(id, at, at);
}

void ScaleOutPackets::resume_ingress(int gpu) {
  if (refused_[gpu].empty()) return;
  sim_.schedule_in(Time::zero(), [this, gpu] {
    std::deque<uint32_t>& held = refused_[gpu];
    while (!held.empty()) {
      const uint32_t id = held.front();
      PacketReceiver* r = receivers_[gpu];
      if (r && !r->can_accept(pool_[id].pkt)) return;
      held.pop_front();
      deliver(id);
    }
  });
}

// ---------------------------------------------------------------- transfers

void ScaleOutPackets::on_delivered(const Packet& p) {
  const auto id = static_cast<uint32_t>(p.cookie);
  if (!transfers_.at(id).complete_on_ack) progress(id, p.payload_bytes);
}

void ScaleOutPackets::on_ack(const Packet& ack) {
  // An ack nobody awaits may come back after its transfer ended and its id was reused.
  if (!ack.ack_awaited) return;
  const auto id = static_cast<uint32_t>(ack.cookie);
  const Transfer& t = transfers_.at(id);
  if (t.complete_on_ack) progress(id, std::min<uint64_t>(t.packet_payload, t.bytes - t.done));
}

void ScaleOutPackets::progress(uint32_t id, uint64_t bytes) {
  Transfer& t = transfers_.at(id);
  t.done += bytes;
  if (t.done < t.bytes) return;
  Callback done = std::move(t.on_complete);
  transfers_.release(id);
  done();
}

// ---------------------------------------------------------------- stats and trace

int ScaleOutPackets::link_pid(uint32_t link) const {
  const FabricTopology::Link& l = topo_.links()[link];
  const bool spine = l.kind == FabricTopology::Kind::LeafToSpine || l.kind == FabricTopology::Kind::SpineToLeaf;
  return spine ? cfg_.gpus + l.a : l.a;
}

std::string ScaleOutPackets::link_track(uint32_t link) const {
  return topo_.name_from(link) + "->" + topo_.name_to(link);
}

void ScaleOutPackets::stats(nlohmann::json& links, nlohmann::json& out, Time elapsed) const {
  for (uint32_t l = 0; l < links_.size(); ++l) {
    links.push_back(links_[l].stats.to_json(topo_.name_from(l), topo_.name_to(l), elapsed));
  }
  out["nodes"] = topo_.nodes();
  out["rdma_payload_bytes"] = rdma_payload_bytes_;
  out["rdma_messages"] = rdma_messages_;
  out["rdma_packets"] = rdma_packets_;
  out["rdma_acks_delivered"] = acks_;
  out["fabric_packets_injected"] = injected_;
  out["fabric_packets_delivered"] = delivered_;
  if (cfg_.fabric_port_buffer_bytes > 0) {
    out["fabric_credit_stalls"] = credit_stalls_;
    out["fabric_credit_wait_ns"] = credit_wait_.ns();
  }
}

void ScaleOutPackets::flush_trace() {
  if (!trace_) return;
  for (uint32_t l = 0; l < links_.size(); ++l) {
    links_[l].stats.flush_span(trace_, link_pid(l), trace_->track(link_pid(l), link_track(l)));
  }
}

void ScaleOutPackets::conservation_violations(std::vector<std::string>& out) const {
  if (injected_ != delivered_) {
    out.push_back(fmt::format("{} fabric packets injected, {} delivered", injected_, delivered_));
  }
  if (free_.size() != pool_.size()) {
    out.push_back(fmt::format("{} of {} fabric packet slots not freed", pool_.size() - free_.size(), pool_.size()));
  }
  for (const auto& qp : qps_) {
    if (!qp.empty()) {
      out.push_back("a fabric work request is still queued at its NIC");
      break;
    }
  }
  if (!windows_.idle()) out.push_back("a fabric message is still outstanding in its queue pair's window");
  for (uint32_t l = 0; l < links_.size(); ++l) {
    if (links_[l].credited && links_[l].room != cfg_.fabric_port_buffer_bytes) {
      out.push_back(fmt::format("fabric link {} has {} of {} B of credits back", link_track(l), links_[l].room,
                                cfg_.fabric_port_buffer_bytes));
      break;
    }
  }
}

}  // namespace moehub
