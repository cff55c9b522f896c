#include "hub/runtime_packet_manager.h"

namespace moehub {

RuntimePacketManager::RuntimePacketManager(Simulator& sim, const RpmConfig& config, uint32_t peers, PacketPort& port)
    : sim_(sim), pool_(config, peers), scheduler_(sim, pool_, port), space_waiters_(peers) {
  scheduler_.on_entry_freed([this](uint32_t peer) { entry_freed(peer); });
}

bool RuntimePacketManager::try_store(uint32_t peer, const RemoteStore& store) {
  if (!pool_.try_insert(peer, store, sim_.now())) {
    ++store_refusals_;
    return false;
  }
  scheduler_.wake();
  return true;
}

bool RuntimePacketManager::try_store_run(uint32_t peer, const RemoteStore& store, uint32_t lines, uint32_t transactions,
                                         uint32_t max_lines) {
  if (!pool_.try_insert_run(peer, store, lines, transactions, max_lines, sim_.now())) {
    ++store_refusals_;
    return false;
  }
  scheduler_.wake();
  return true;
}

void RuntimePacketManager::notify_when_space(uint32_t peer, Callback ready) {
  space_waiters_.at(peer).push_back(std::move(ready));
}

void RuntimePacketManager::flush() {
  pool_.flush();
  scheduler_.wake();
}

void RuntimePacketManager::notify_when_drained(Callback done) {
  if (pool_.buffered() == 0) {
    sim_.schedule_in(Time::zero(), std::move(done));
    return;
  }
  drain_waiters_.push_back(std::move(done));
}

void RuntimePacketManager::entry_freed(uint32_t peer) {
  // The freed entry is usable in the cycle it frees: waiting stagers refill it now, from inside
  // the scheduler's pump (an event each cost one event per packet sent under back-pressure).
  // Each may store again or wait again.
  run_waiters(space_waiters_[peer], waiter_scratch_);
  if (pool_.buffered() == 0) {
    for (Callback& cb : drain_waiters_) sim_.schedule_in(Time::zero(), std::move(cb));
    drain_waiters_.clear();
  }
}

RpmCounters RuntimePacketManager::counters() const {
  RpmCounters c = scheduler_.counters();
  c.stores = pool_.stores();
  c.merges = pool_.merges();
  c.store_refusals = store_refusals_;
  return c;
}

double RuntimePacketManager::mean_packet_fill() const { return counters().mean_packet_fill(pool_.config().entry_bytes); }

}  // namespace moehub
