#include "net/packet_network.h"

#include <fmt/format.h>
#include <stdexcept>
#include <utility>

#include "net/scaleout_packet.h"
#include "net/transfer_engine.h"
#include "sim/error.h"

namespace moehub {

const char* packet_kind_name(PacketKind k) {
  switch (k) {
    case PacketKind::Write: return "write";
    case PacketKind::Ack: return "ack";
    case PacketKind::ReadRequest: return "read_request";
    case PacketKind::ReadResponse: return "read_response";
    case PacketKind::RowSparseWrite: return "rowsp_write";
    case PacketKind::Flag: return "flag";
  }
  return "?";
}

PacketNetwork::PacketNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace)
    : cfg_(config), sim_(sim), trace_(trace) {
  cfg_.validate();
  n_ = static_cast<uint32_t>(cfg_.gpus);
  s_ = static_cast<uint32_t>(cfg_.planes);
  if (s_ > 255) throw UserError("net.switch_planes", "the packet fidelity supports up to 255 planes");
  if (n_ > 64) throw UserError("run.gpus", "the packet fidelity supports up to 64 GPUs; use net.fidelity = \"flow\"");
  egress_cap_[0] = cfg_.buffer_flits(cfg_.egress_buffer_bytes);
  egress_cap_[1] = cfg_.buffer_flits(cfg_.response_buffer_bytes);
  ack_flits_ = cfg_.wire_flits(0);
  link_latency_ = cfg_.gpu_switch_latency;
  lookahead_ = link_latency_;
  hop_to_output_ = cfg_.gpu_switch_latency + cfg_.switch_latency;
  const uint32_t max_flits = cfg_.wire_flits(cfg_.max_payload_bytes);
  ser_.resize(max_flits + 1);
  for (uint32_t f = 0; f <= max_flits; ++f) {
    ser_[f] = cfg_.plane_bandwidth().transfer_time(static_cast<uint64_t>(f) * cfg_.flit_bytes);
  }
  coalesce_ = ser_[max_flits];

  egress_.resize(static_cast<size_t>(n_) * 2);
  next_plane_ = PerPair<uint8_t>(static_cast<int>(n_), 0);
  uplinks_.resize(static_cast<size_t>(n_) * s_);
  for (auto& u : uplinks_) {
    u.credits.init(cfg_.buffer_flits(cfg_.switch_buffer_bytes), cfg_.buffer_flits(cfg_.response_buffer_bytes));
  }
  voq_.resize(static_cast<size_t>(s_) * n_ * n_ * 2);
  voq_head_.resize(voq_.size());
  outputs_.resize(static_cast<size_t>(s_) * n_);
  for (auto& o : outputs_) {
    o.credits.init(cfg_.buffer_flits(cfg_.ingress_buffer_bytes), cfg_.buffer_flits(cfg_.response_buffer_bytes));
  }
  ingress_.resize(static_cast<size_t>(n_) * s_ * 2);
  ingress_blocked_.assign(static_cast<size_t>(n_) * s_, kFree);
  ports_.resize(static_cast<int>(n_));
  pool_.reserve(1024);
  engine_ = std::make_unique<TransferEngine>(*this, sim_);
  if (cfg_.scale_out()) fabric_ = std::make_unique<ScaleOutPackets>(cfg_, sim_, trace_);
  if (trace_) {
    for (uint32_t s = 0; s < s_; ++s) trace_->name_process(1000 + static_cast<int>(s), fmt::format("NVSwitch {}", s));
  }
}

PacketNetwork::~PacketNetwork() = default;

// ---------------------------------------------------------------- pool and queues

uint32_t PacketNetwork::alloc_slot() {
  if (free_head_ != kNil) {
    const uint32_t id = free_head_;
    free_head_ = pool_[id].next;
    pool_[id].next = kNil;
    if (free_head_ != kNil) __builtin_prefetch(&pool_[free_head_], 1);  // the next packet's slot
    return id;
  }
  pool_.emplace_back();
  return static_cast<uint32_t>(pool_.size() - 1);
}

void PacketNetwork::push(Queue& q, uint32_t id) {
  Slot& s = pool_[id];
  s.next = kNil;
  if (q.tail == kNil) {
    q.head = id;
  } else {
    pool_[q.tail].next = id;
  }
  q.tail = id;
  q.flits += s.flits;
}

void PacketNetwork::set_voq_head(Output& o, int tc, uint32_t in, size_t index) {
  const Slot& s = pool_[voq_[index].head];
  voq_head_[index] = VoqHead{s.ready_ps, s.flits, s.pkt.priority};
  // The packet behind becomes head at this VOQ's next grant, a few grants from now; its slot
  // was written when it left its GPU, long enough ago to have left the cache.
  if (s.next != kNil) __builtin_prefetch(&pool_[s.next]);
  if (s.pkt.priority > 0) {
    o.prioritized[tc] |= 1ULL << in;
  } else {
    o.prioritized[tc] &= ~(1ULL << in);
  }
}

void PacketNetwork::push_voq(uint32_t output, int tc, uint32_t in, uint32_t id) {
  const size_t index = voq_index(output, tc, in);
  Queue& q = voq_[index];
  const bool was_empty = q.empty();
  push(q, id);
  Output& o = outputs_[output];
  ++o.pending;
  if (was_empty) {
    o.occupied[tc] |= 1ULL << in;
    set_voq_head(o, tc, in, index);
  }
}

uint32_t PacketNetwork::pop_voq(uint32_t output, int tc, uint32_t in) {
  const size_t index = voq_index(output, tc, in);
  Queue& q = voq_[index];
  const uint32_t id = pop(q);
  Output& o = outputs_[output];
  --o.pending;
  if (q.empty()) {
    o.occupied[tc] &= ~(1ULL << in);
    o.prioritized[tc] &= ~(1ULL << in);
  } else {
    set_voq_head(o, tc, in, index);
  }
  return id;
}

uint32_t PacketNetwork::pop(Queue& q) {
  const uint32_t id = q.head;
  Slot& s = pool_[id];
  q.head = s.next;
  if (q.head == kNil) q.tail = kNil;
  q.flits -= s.flits;
  s.next = kNil;
  return id;
}

// ---------------------------------------------------------------- injection

bool PacketNetwork::can_send(int gpu, uint32_t payload_bytes, PacketKind kind) const {
  const int tc = static_cast<int>(traffic_class(kind));
  const Queue& q = egress_[static_cast<size_t>(gpu) * 2 + static_cast<size_t>(tc)];
  return q.flits + cfg_.wire_flits(payload_bytes) <= egress_cap_[tc];
}

bool PacketNetwork::crosses(int src, int dst) const { return fabric_ && fabric_->crosses(src, dst); }

bool PacketNetwork::can_send_to(int src, int dst, uint32_t payload_bytes, PacketKind kind) const {
  if (crosses(src, dst)) return fabric_->can_send(src, dst, kind);
  return can_send(src, payload_bytes, kind);
}

bool PacketNetwork::can_send_any(int src, uint32_t payload_bytes, PacketKind kind) const {
  return can_send(src, payload_bytes, kind) || (fabric_ && fabric_->can_send_any(src));
}

void PacketNetwork::request_room_to(int src, int dst, RoomListener* listener) {
  if (crosses(src, dst)) {
    fabric_->wait_room(src, dst, listener);
    return;
  }
  request_room(src, listener);
}

void PacketNetwork::send(Packet&& p) {
  if (p.src < 0 || p.dst < 0 || static_cast<uint32_t>(p.src) >= n_ || static_cast<uint32_t>(p.dst) >= n_) {
    throw std::logic_error(fmt::format("PacketNetwork::send: GPU {} -> {} outside 0..{}", p.src, p.dst, n_ - 1));
  }
  if (p.src == p.dst) throw std::logic_error("PacketNetwork::send: a GPU does not send packets to itself");
  if (crosses(p.src, p.dst)) {
    fabric_->send(std::move(p));
    return;
  }
  if (p.payload_bytes > cfg_.max_payload_bytes) throw std::logic_error("PacketNetwork::send: payload above net.max_payload_bytes");
  if (!can_send(p.src, p.payload_bytes, p.kind)) throw std::logic_error("PacketNetwork::send: egress FIFO full");
  const int src = p.src;
  const int tc = static_cast<int>(traffic_class(p.kind));
  const uint32_t id = alloc_slot();
  Slot& s = pool_[id];
  s.flits = static_cast<uint16_t>(cfg_.wire_flits(p.payload_bytes));
  s.tc = static_cast<uint8_t>(tc);
  s.pkt = std::move(p);  // its plane is chosen when it reaches the head of the FIFO
  Queue& q = egress(src, tc);
  push(q, id);
  Port& port = ports_[src];
  if (q.flits > port.peak_flits) port.peak_flits = q.flits;
  ++port.injected;
  ++injected_packets_;
  pump(src);
}

void PacketNetwork::request_room(int gpu, RoomListener* listener) {
  auto& ls = ports_[gpu].listeners;
  for (auto* l : ls) {
    if (l == listener) return;
  }
  ls.push_back(listener);
}

void PacketNetwork::request_response_room(int gpu, RoomListener* listener) {
  auto& ls = ports_[gpu].response_listeners;
  for (auto* l : ls) {
    if (l == listener) return;
  }
  ls.push_back(listener);
}

void PacketNetwork::set_receiver(int gpu, PacketReceiver* receiver) {
  ports_[gpu].receiver = receiver;
  if (fabric_) fabric_->set_receiver(gpu, receiver);
}

// ---------------------------------------------------------------- egress: FIFO -> uplinks

void PacketNetwork::pump(int gpu) {
  Port& port = ports_[gpu];
  if (port.pumping) {
    port.repump = true;
    return;
  }
  port.pumping = true;
  Time wake = Time::max();
  do {
    port.repump = false;
    bool popped[2] = {false, false};
    for (;;) {
      if (egress(gpu, 0).empty() && egress(gpu, 1).empty()) break;
      // With every link of the GPU busy nothing can leave before the first one frees: one look
      // at the links instead of a scan per class (the common case under load).
      {
        const Time now = sim_.now();
        const Uplink* up = &uplinks_[link_index(gpu, 0)];
        Time link_free = Time::max();
        for (uint32_t plane = 0; plane < s_; ++plane) link_free = min(link_free, up[plane].busy_until);
        if (link_free > now) {
          wake = min(wake, link_free);
          break;
        }
      }
      bool sent = false;
      for (int tc = 1; tc >= 0; --tc) {  // responses first: they are small and unblock senders
        if (egress(gpu, tc).empty() || !send_head(gpu, tc, wake)) continue;
        popped[tc] = true;
        sent = true;
      }
      if (!sent) break;
    }
    if (popped[1] && port.ack_room_wanted) {
      port.ack_room_wanted = false;
      retry_ingress(gpu, kByAckRoom);
    }
    if (popped[1] && !port.response_listeners.empty()) {
      port.notifying.swap(port.response_listeners);
      for (RoomListener* l : port.notifying) l->on_room(gpu);
      port.notifying.clear();
    }
    if (popped[0] && !port.listeners.empty()) {
      port.notifying.swap(port.listeners);
      for (RoomListener* l : port.notifying) l->on_room(gpu);
      port.notifying.clear();
    }
  } while (port.repump);
  port.pumping = false;
  // Nothing can leave before `wake` unless a packet arrives (which pumps) or a credit returns
  // earlier than those counted here (which asks for a wake): a pending wake before it would find
  // nothing to do, one after it would be late. (A wake may have been asked for a plane that a
  // later iteration used: harmless, pump re-checks.)
  schedule_egress_wake(gpu, wake, true);
}

// Sends the head of class `tc`'s egress queue of `gpu` on an idle plane with credits, or
// records when one could take it (`wake`) and which planes stall for credits; true if it left.
bool PacketNetwork::send_head(int gpu, int tc, Time& wake) {
  Port& port = ports_[gpu];
  Queue& q = egress(gpu, tc);
  Slot& head = pool_[q.head];
  const Time now = sim_.now();
  // The head takes its destination's next plane in rotation (consecutive packets to one
  // peer use consecutive planes, like the GPU's interleaving of 128 B lines over its
  // NVLinks), or the first plane after it that is idle and has credits: a packet never
  // waits for one link's serialisation while another link of the GPU is idle.
  uint8_t& rr = next_plane_(gpu, head.pkt.dst);
  int chosen = -1;
  bool starved = false;
  Time link_free = Time::max();
  for (uint32_t i = 0; i < s_; ++i) {
    const uint32_t plane = rr + i < s_ ? rr + i : rr + i - s_;
    Uplink& up = uplinks_[link_index(gpu, plane)];
    if (up.busy_until > now) {
      link_free = min(link_free, up.busy_until);
      continue;
    }
    if (up.credits.available(tc, now) < head.flits) {
      starved = true;
      continue;
    }
    chosen = static_cast<int>(plane);
    break;
  }
  if (chosen < 0) {
    wake = min(wake, link_free);
    // Head-of-line blocking: nothing behind this packet may pass it. The idle links that
    // lack credits stall until their credits return.
    if (starved) {
      port.planes_stalled = true;
      for (uint32_t plane = 0; plane < s_; ++plane) {
        Uplink& up = uplinks_[link_index(gpu, plane)];
        if (up.busy_until > now || up.credits.available(tc, now) >= head.flits) continue;
        up.need[tc] = head.flits;
        up.stats.stall(now);
        wake = min(wake, up.credits.time_available(tc, head.flits));
      }
    }
    return false;
  }
  head.plane = static_cast<uint8_t>(chosen);
  rr = static_cast<uint8_t>(chosen + 1 == static_cast<int>(s_) ? 0 : chosen + 1);
  // Planes that stalled for this head stop stalling now that it leaves (on whichever).
  if (port.planes_stalled) {
    port.planes_stalled = false;
    for (uint32_t plane = 0; plane < s_; ++plane) {
      Uplink& up = uplinks_[link_index(gpu, plane)];
      if (!up.waiting() || static_cast<int>(plane) == chosen) continue;
      up.stop_waiting();
      up.stats.end_stall(now);
    }
  }
  send_on_uplink(gpu, tc);
  return true;
}

void PacketNetwork::send_on_uplink(int gpu, int tc) {
  const Time now = sim_.now();
  const uint32_t id = pop(egress(gpu, tc));
  Slot& s = pool_[id];
  Uplink& up = uplinks_[link_index(gpu, s.plane)];
  up.credits.take(tc, s.flits);
  up.stop_waiting();
  const Time ser = ser_[s.flits];
  up.busy_until = now + ser;
  up.stats.record_send(now, ser, s.flits * cfg_.flit_bytes, s.pkt.payload_bytes);
  const uint32_t occupancy = up.credits.in_use(0) + up.credits.in_use(1);
  if (occupancy > up.stats.peak_buffer_flits) up.stats.peak_buffer_flits = occupancy;
  if (trace_) {
    up.stats.trace_busy(trace_, gpu, trace_->track(gpu, fmt::format("link to sw{}", s.plane)), now, up.busy_until, coalesce_);
  }
  // Store and forward: eligible at the switch output once fully received and traversed.
  s.ready_ps = (up.busy_until + hop_to_output_).ps();
  const uint32_t dst = static_cast<uint32_t>(s.pkt.dst);
  const uint32_t out = s.plane * n_ + dst;
  const Time ready = Time::from_ps(s.ready_ps);
  push_voq(out, tc, static_cast<uint32_t>(gpu), id);
  schedule_output_wake(out, max(ready, outputs_[out].busy_until));
}

void PacketNetwork::schedule_egress_wake(int gpu, Time at, bool exact) {
  Port& port = ports_[gpu];
  const int64_t t = at == Time::max() ? INT64_MAX : at.ps();
  if (exact ? t == port.wake_at : t >= port.wake_at) return;  // an earlier wake re-checks and asks again
  if (port.wake_at != INT64_MAX) sim_.cancel(port.wake);
  port.wake_at = t;
  if (t == INT64_MAX) return;
  port.wake = sim_.schedule_at(at, [this, gpu] { on_egress_wake(gpu); });
}

void PacketNetwork::on_egress_wake(int gpu) {
  ports_[gpu].wake_at = INT64_MAX;  // the only pending wake: the others were cancelled
  pump(gpu);
}

// ---------------------------------------------------------------- switch: VOQs -> output links

void PacketNetwork::schedule_output_wake(uint32_t out, Time at) {
  Output& o = outputs_[out];
  if (at.ps() >= o.wake_at) return;
  o.wake_at = at.ps();
  sim_.schedule_at(at, [this, out] { on_output_wake(out); });
}

void PacketNetwork::on_output_wake(uint32_t out) {
  Output& o = outputs_[out];
  if (sim_.now().ps() >= o.wake_at) o.wake_at = INT64_MAX;
  arbitrate(out);
}

// An output decides every grant up to one link latency ahead in a single event: a packet that
// reaches its VOQ later is ready only after a link latency (store and forward plus the hop), and
// a credit returned later crosses the link first, so nothing that happens after `now` can change
// a decision taken for a time before now + link latency. The grants are the ones an event per
// grant would make; only the events that carry them are fewer.
void PacketNetwork::arbitrate(uint32_t out) {
  Output& o = outputs_[out];
  const Time now = sim_.now();
  const Time horizon = now + lookahead_;
  Time t = max(now, o.busy_until);
  while (o.pending > 0) {
    if (t > now && t >= horizon) {
      schedule_output_wake(out, t);
      return;
    }
    int64_t earliest = INT64_MAX;
    if (grant(out, t, earliest)) {
      t = o.busy_until;
      continue;
    }
    if (earliest == INT64_MAX) return;  // a push or a credit wakes it
    t = Time::from_ps(earliest);
  }
}

// One grant at time t, or false with the earliest time something may change (ready head or
// returning credit) in `earliest`.
bool PacketNetwork::grant(uint32_t out, Time t, int64_t& earliest) {
  Output& o = outputs_[out];
  bool credit_blocked = false;
  for (int tc = 1; tc >= 0; --tc) {  // responses first (strict priority class)
    const uint32_t avail = o.credits.available(tc, t);
    int64_t best = -1;
    int best_priority = -1;
    // Round-robin from the input after the last grant, visiting only non-empty VOQs.
    const uint64_t occupied = o.occupied[tc];
    const uint64_t after = o.rr + 1 < 64 ? occupied & (~0ULL << (o.rr + 1)) : 0;
    const VoqHead* heads = &voq_head_[voq_index(out, tc, 0)];
    for (uint64_t pass : {after, occupied & ~after}) {
      while (pass) {
        const uint32_t in = static_cast<uint32_t>(__builtin_ctzll(pass));
        pass &= pass - 1;
        const VoqHead& h = heads[in];
        if (h.ready_ps > t.ps()) {
          if (h.ready_ps < earliest) earliest = h.ready_ps;
          continue;
        }
        if (h.flits > avail) {
          credit_blocked = true;
          continue;
        }
        if (static_cast<int>(h.priority) > best_priority) {
          best = in;
          best_priority = static_cast<int>(h.priority);
          // With no prioritised head in this class, the first eligible input in round-robin
          // order wins; the rest of the scan could not change the choice.
          if (o.prioritized[tc] == 0) break;
        }
      }
      if (best >= 0 && o.prioritized[tc] == 0) break;
    }
    if (best >= 0) {
      send_on_downlink(out, tc, static_cast<uint32_t>(best), t);
      return true;
    }
  }
  if (credit_blocked) {
    o.waiting = true;
    o.stats.stall(t);
    const Time ret = o.credits.next_return();
    if (ret.ps() < earliest) earliest = ret.ps();
  }
  return false;
}

void PacketNetwork::send_on_downlink(uint32_t out, int tc, uint32_t in, Time now) {
  Output& o = outputs_[out];
  const int plane = static_cast<int>(out / n_);
  const int dst = static_cast<int>(out % n_);
  const uint32_t id = pop_voq(out, tc, in);
  Slot& s = pool_[id];
  const Time ser = ser_[s.flits];
  o.busy_until = now + ser;
  o.rr = in;
  o.waiting = false;
  o.credits.take(tc, s.flits);
  o.stats.record_send(now, ser, s.flits * cfg_.flit_bytes, s.pkt.payload_bytes);
  const uint32_t occupancy = o.credits.in_use(0) + o.credits.in_use(1);
  if (occupancy > o.stats.peak_buffer_flits) o.stats.peak_buffer_flits = occupancy;
  if (trace_) {
    o.stats.trace_busy(trace_, 1000 + plane, trace_->track(1000 + plane, fmt::format("link to gpu{}", dst)), now,
                       o.busy_until, coalesce_);
  }
  // The input buffer slot frees once the packet has left; the credit crosses back to the GPU.
  Uplink& up = uplinks_[link_index(static_cast<int>(in), plane)];
  const Time credit_at = o.busy_until + link_latency_;
  up.credits.give_at(credit_at, tc, s.flits);
  // A stalled head can leave once its class has the credits it needs, which may be later.
  if (up.need[tc] > 0) {
    schedule_egress_wake(static_cast<int>(in), max(sim_.now(), up.credits.time_available(tc, up.need[tc])));
  }
  const Time arrival = o.busy_until + link_latency_;
  if (tc == 1) {
    // The response class is never refused at ingress, so its buffer slot frees at arrival and
    // the credit is known now (returns of a class stay in time order).
    o.credits.give_at(arrival + link_latency_, tc, s.flits);
    if (s.pkt.kind == PacketKind::Ack && !s.pkt.ack_awaited) {
      retire_ack(dst, id);
      return;
    }
  }
  s.ready_ps = arrival.ps();
  push(ingress(dst, plane, tc), id);
  schedule_ingress_wake(dst, plane, tc, arrival);
}

// An ack nobody waits for has done its work once it has crossed the links: its arrival needs
// no event.
void PacketNetwork::retire_ack(int gpu, uint32_t id) {
  const Packet p = release(id);
  count_delivered(gpu, p.kind);
  if (p.client) p.client->on_ack(p);
}

// The slot is freed before anyone hears of the packet: a client that injects may grow the pool.
Packet PacketNetwork::release(uint32_t id) {
  Packet p = std::move(pool_[id].pkt);
  pool_[id].next = free_head_;
  free_head_ = id;
  return p;
}

void PacketNetwork::count_delivered(int gpu, PacketKind kind) {
  ++ports_[gpu].delivered;
  ++delivered_packets_;
  ++delivered_by_kind_[static_cast<size_t>(kind)];
  if (kind == PacketKind::Ack) ++acks_delivered_;
}

// One pending delivery event per ingress queue (not per packet) keeps the event heap small.
void PacketNetwork::schedule_ingress_wake(int gpu, int plane, int tc, Time at) {
  Queue& q = ingress(gpu, plane, tc);
  if (at.ps() >= q.wake_at) return;
  q.wake_at = at.ps();
  sim_.schedule_at(at, [this, gpu, plane, tc] { on_ingress(gpu, plane, tc); });
}

// ---------------------------------------------------------------- ingress: buffer -> receiver

void PacketNetwork::on_ingress(int gpu, int plane, int tc) {
  Queue& q = ingress(gpu, plane, tc);
  Port& port = ports_[gpu];
  const size_t link = link_index(gpu, plane);
  const uint32_t out = static_cast<uint32_t>(plane) * n_ + static_cast<uint32_t>(gpu);
  if (sim_.now().ps() >= q.wake_at) q.wake_at = INT64_MAX;
  while (!q.empty()) {
    const Time now = sim_.now();
    Slot& head = pool_[q.head];
    if (head.ready_ps > now.ps()) {
      schedule_ingress_wake(gpu, plane, tc, Time::from_ps(head.ready_ps));
      break;
    }
    bool ack = false;
    if (tc == 0) {
      if (ingress_blocked_[link] != kFree) break;
      ack = cfg_.write_ack && is_write(head.pkt.kind);
      if (ack && egress(gpu, 1).flits + ack_flits_ > egress_cap_[1]) {
        ingress_blocked_[link] = kByAckRoom;
        port.ack_room_wanted = true;
        break;
      }
      if (port.receiver && !port.receiver->can_accept(head.pkt)) {
        ingress_blocked_[link] = kByReceiver;
        break;
      }
    }
    const uint32_t id = pop(q);
    // The next packet on this link arrives a serialisation time later, a few dozen events from
    // now; its slot was written when the switch granted it, up to two link latencies ago.
    if (q.head != kNil) __builtin_prefetch(&pool_[q.head]);
    const uint16_t flits = pool_[id].flits;
    Packet p = release(id);
    // The ingress slot frees now; the credit reaches the switch output one link latency later
    // (the response class's credit was given when the packet was sent).
    if (tc == 0) {
      Output& o = outputs_[out];
      const Time credit_at = now + link_latency_;
      o.credits.give_at(credit_at, tc, flits);
      if (o.waiting) schedule_output_wake(out, credit_at);
    }
    count_delivered(gpu, p.kind);
    if (tc == 1) {
      if (p.kind == PacketKind::Ack) {
        if (p.client) p.client->on_ack(p);
      } else {
        if (p.client) p.client->on_delivered(p);
        if (port.receiver) port.receiver->deliver(std::move(p));
      }
      continue;
    }
    if (ack) {
      Packet a;
      a.src = p.dst;
      a.dst = p.src;
      a.payload_bytes = 0;
      a.kind = PacketKind::Ack;
      a.priority = p.priority;
      a.cookie = p.cookie;
      a.client = p.client;
      a.ack_awaited = p.ack_awaited;
      send(std::move(a));
    }
    if (p.client) p.client->on_delivered(p);
    if (port.receiver) port.receiver->deliver(std::move(p));
  }
}

void PacketNetwork::retry_ingress(int gpu, Blocked reason) {
  for (uint32_t s = 0; s < s_; ++s) {
    uint8_t& b = ingress_blocked_[link_index(gpu, s)];
    if (b != reason) continue;
    b = kFree;
    const int plane = static_cast<int>(s);
    sim_.schedule_in(Time::zero(), [this, gpu, plane] { on_ingress(gpu, plane, 0); });
  }
}

void PacketNetwork::resume_ingress(int gpu) {
  retry_ingress(gpu, kByReceiver);
  if (fabric_) fabric_->resume_ingress(gpu);
}

// ---------------------------------------------------------------- transfers

void PacketNetwork::transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) {
  stream(src, dst, bytes, priority, StreamOptions{}, std::move(on_complete));
}

void PacketNetwork::stream(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                           Callback on_complete) {
  if (bytes > 0 && src >= 0 && dst >= 0 && src < cfg_.gpus && dst < cfg_.gpus && crosses(src, dst)) {
    fabric_->transfer(src, dst, bytes, priority, options, std::move(on_complete));
    return;
  }
  engine_->start(src, dst, bytes, priority, options, std::move(on_complete));
}

void PacketNetwork::stream_sent(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                                Callback on_sent, Callback on_complete) {
  // Across nodes the scale-out model reports no hand-over: the base's (sent with the completion).
  if (bytes > 0 && src >= 0 && dst >= 0 && src < cfg_.gpus && dst < cfg_.gpus && crosses(src, dst)) {
    Network::stream_sent(src, dst, bytes, priority, options, std::move(on_sent), std::move(on_complete));
    return;
  }
  engine_->start(src, dst, bytes, priority, options, std::move(on_complete), std::move(on_sent));
}

}  // namespace moehub
