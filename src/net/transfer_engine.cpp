#include "net/transfer_engine.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moehub {

TransferEngine::TransferEngine(PacketNetwork& net, Simulator& sim)
    : net_(net), sim_(sim), engines_(net.config().gpus) {}

void TransferEngine::start(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options,
                           Callback on_complete, Callback on_sent) {
  const int n = net_.config().gpus;
  if (src < 0 || dst < 0 || src >= n || dst >= n) throw std::logic_error("transfer: GPU index out of range");
  if (bytes == 0 || src == dst) {
    // Nothing crosses the fabric (a local copy is the GPU memory model's business).
    if (on_sent) sim_.schedule_in(Time::zero(), std::move(on_sent));
    sim_.schedule_in(Time::zero(), std::move(on_complete));
    return;
  }
  if (options.complete_on_ack && !net_.config().write_ack) {
    throw std::logic_error("transfer: completion on acks needs net.write_ack");
  }
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<uint32_t>(transfers_.size());
    transfers_.emplace_back();
  }
  Transfer& t = transfers_[id];
  t.src = src;
  t.dst = dst;
  t.bytes = bytes;
  t.sent = 0;
  t.done = 0;
  t.packet_payload = options.packet_payload ? std::min(options.packet_payload, net_.config().max_payload_bytes)
                                            : net_.config().max_payload_bytes;
  t.kind = options.kind;
  t.complete_on_ack = options.complete_on_ack;
  t.priority = static_cast<uint8_t>(std::clamp(priority, 0, 255));
  t.on_complete = std::move(on_complete);
  t.on_sent = std::move(on_sent);
  engines_[src].active.push_back(id);
  pump(src);
}

void TransferEngine::pump(int gpu) {
  Engine& e = engines_[gpu];
  if (e.pumping) return;  // the outer call keeps going while the FIFO has room
  e.pumping = true;
  while (!e.active.empty()) {
    if (e.next >= e.active.size()) e.next = 0;
    const uint32_t id = e.active[e.next];
    Transfer& t = transfers_[id];
    const uint32_t payload = static_cast<uint32_t>(std::min<uint64_t>(t.packet_payload, t.bytes - t.sent));
    if (!net_.can_send(gpu, payload, t.kind)) {
      if (!e.waiting_room) {
        e.waiting_room = true;
        net_.request_room(gpu, this);
      }
      break;
    }
    Packet p;
    p.src = t.src;
    p.dst = t.dst;
    p.payload_bytes = payload;
    p.kind = t.kind;
    p.priority = t.priority;
    p.cookie = id;
    p.client = this;
    p.ack_awaited = t.complete_on_ack;
    t.sent += payload;
    Callback sent;
    if (t.sent == t.bytes) {
      e.active.erase(e.active.begin() + static_cast<std::ptrdiff_t>(e.next));
      sent = std::move(t.on_sent);
    } else {
      ++e.next;
    }
    net_.send(std::move(p));
    // May start transfers (this GPU's join `active`; this loop sends them) and grow transfers_.
    if (sent) sent();
  }
  e.pumping = false;
}

void TransferEngine::on_room(int gpu) {
  engines_[gpu].waiting_room = false;
  pump(gpu);
}

void TransferEngine::on_delivered(const Packet& p) {
  const uint32_t id = static_cast<uint32_t>(p.cookie);
  if (!transfers_[id].complete_on_ack) progress(id, p.payload_bytes);
}

void TransferEngine::on_ack(const Packet& ack) {
  // An ack nobody awaits may come back after its transfer ended and its id was reused.
  if (!ack.ack_awaited) return;
  const uint32_t id = static_cast<uint32_t>(ack.cookie);
  Transfer& t = transfers_[id];
  if (t.complete_on_ack) progress(id, std::min<uint64_t>(t.packet_payload, t.bytes - t.done));
}

void TransferEngine::progress(uint32_t id, uint64_t bytes) {
  Transfer& t = transfers_[id];
  t.done += bytes;
  if (t.done < t.bytes) return;
  Callback done = std::move(t.on_complete);
  free_.push_back(id);
  done();
}

}  // namespace moehub
