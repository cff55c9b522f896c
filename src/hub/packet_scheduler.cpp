#include "hub/packet_scheduler.h"

namespace moehub {

PacketScheduler::PacketScheduler(Simulator& sim, RemoteWriteBufferPool& pool, PacketPort& port)
    : sim_(sim), pool_(pool), port_(port), clock_(pool.config().clock), blocked_(pool.peers(), false) {}

void PacketScheduler::wake() {
  if (waiting_for_port_) {
    if (pool_.non_full_entries() == 0) return;  // a whole entry more: refused like the others
    waiting_for_port_ = false;
  }
  if (sim_.pending(pump_event_)) return;
  // Pumps run on hub cycle edges, no earlier than the next issue slot.
  const Time at = max(clock_.time_of(clock_.cycle_at_or_after(sim_.now())), next_issue_);
  pump_event_ = sim_.schedule_at(at, [this] { pump(); });
}

void PacketScheduler::pump() {
  const Time now = sim_.now();
  const uint32_t n = pool_.peers();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t peer = (next_partition_ + i) % n;
    if (blocked_[peer]) continue;
    const auto pick = pool_.candidate(peer, now);
    if (!pick) continue;
    // Asked first: under back-pressure most candidates are refused, and building each packet
    // only to have it refused was a large share of the scheduler's work.
    HubPacket pkt;
    const bool sent = port_.can_send(peer, pool_.payload_bytes(peer, *pick)) && port_.try_send(pkt = pool_.packet(peer, *pick));
    if (!sent) {
      ++n_.port_refusals;
      blocked_[peer] = true;
      port_.notify_when_ready(peer, [this, peer] {
        blocked_[peer] = false;
        wake();
      });
      continue;
    }
    pool_.take(peer, *pick);
    // A run (hub.flow_line_runs) is its lines: counted as they would be, and the next issue
    // slot comes after all of them, so the hub's issue rate is kept.
    n_.packets += pkt.lines;
    n_.payload_bytes += pkt.payload_bytes;
    if (pkt.timer_bypass) ++n_.timer_bypasses;
    else if (pkt.flushed) ++n_.flushed_packets;
    else n_.full_packets += pkt.lines;
    next_partition_ = (peer + 1) % n;
    next_issue_ = clock_.time_of(clock_.cycle_at_or_after(now) + static_cast<uint64_t>(pool_.config().issue_cycles) * pkt.lines);
    // Under back-pressure the packet just sent fills the port again: a pump at the next issue
    // slot would find every candidate refused (each a whole entry) and wait for the port. Wait
    // for it now instead; the next packet leaves at the same slot either way. The freed hook's
    // stores (refills of the entry just freed) keep the wait unless they leave a partial entry.
    if (pool_.non_full_entries() == 0 && port_.accepts_nothing(pool_.config().entry_bytes)) {
      waiting_for_port_ = true;
      port_.notify_when_ready(peer, [this] {
        waiting_for_port_ = false;
        wake();
      });
    }
    if (freed_hook_) freed_hook_(peer);
    wake();
    return;
  }
  arm_timer();
}

void PacketScheduler::arm_timer() {
  Time earliest = Time::max();
  for (uint32_t peer = 0; peer < pool_.peers(); ++peer) {
    if (blocked_[peer]) continue;
    if (const auto due = pool_.next_deadline(peer)) earliest = min(earliest, *due);
  }
  if (earliest == Time::max()) return;
  if (sim_.pending(timer_event_) && timer_at_ <= earliest) return;
  sim_.cancel(timer_event_);
  timer_at_ = earliest;
  timer_event_ = sim_.schedule_at(max(earliest, sim_.now()), [this] { wake(); });
}

}  // namespace moehub
