#include "gpu/shared_bandwidth.h"

#include <algorithm>
#include <stdexcept>

namespace moehub::gpu {
namespace {
constexpr unsigned __int128 kPicobytesPerByte = 1000000000000ULL;
}

SharedBandwidth::SharedBandwidth(Simulator& sim, Bandwidth capacity) : sim_(sim), capacity_(capacity) {
  if (capacity.bytes_per_second() == 0) throw std::logic_error("SharedBandwidth: zero capacity");
}

uint32_t SharedBandwidth::store(Callback done) {
  if (!free_slots_.empty()) {
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(done);
    return slot;
  }
  callbacks_.push_back(std::move(done));
  return static_cast<uint32_t>(callbacks_.size() - 1);
}

void SharedBandwidth::advance() {
  const Time now = sim_.now();
  if (now == updated_) return;
  const auto dt = static_cast<unsigned __int128>((now - updated_).ps());
  if (!heap_.empty()) {
    virtual_ += static_cast<unsigned __int128>(capacity_.bytes_per_second()) * dt / heap_.size();
    busy_ += now - updated_;
  }
  updated_ = now;
}

void SharedBandwidth::request(uint64_t bytes, Callback done) {
  advance();
  ++requests_;
  bytes_ += bytes;
  if (bytes == 0) {
    sim_.schedule_in(Time::zero(), std::move(done));
    return;
  }
  const auto cmp = [](const Pending& a, const Pending& b) { return a.after(b); };
  heap_.push_back(Pending{virtual_ + static_cast<Picobytes>(bytes) * kPicobytesPerByte, seq_++, store(std::move(done))});
  std::push_heap(heap_.begin(), heap_.end(), cmp);
  reschedule();
}

void SharedBandwidth::reschedule() {
  if (next_.valid()) sim_.cancel(next_);
  next_ = EventHandle{};
  if (heap_.empty()) return;
  // An arrival at the very instant of a departure (before its event runs) can advance virtual
  // time past the front's finish (the departure was scheduled with a ceiling): it is due now.
  const Picobytes remaining = heap_.front().finish > virtual_ ? heap_.front().finish - virtual_ : 0;
  const auto n = static_cast<unsigned __int128>(heap_.size());
  const auto rate = static_cast<unsigned __int128>(capacity_.bytes_per_second());
  const Picobytes dt = (remaining * n + rate - 1) / rate;
  next_ = sim_.schedule_in(Time::from_ps(static_cast<int64_t>(dt)), [this] { on_departure(); });
}

void SharedBandwidth::on_departure() {
  next_ = EventHandle{};
  advance();
  const auto cmp = [](const Pending& a, const Pending& b) { return a.after(b); };
  // Everything served by now departs, in (finish, arrival) order; callbacks run after the
  // state is consistent because they may issue new requests.
  while (!heap_.empty() && heap_.front().finish <= virtual_) {
    std::pop_heap(heap_.begin(), heap_.end(), cmp);
    const uint32_t slot = heap_.back().slot;
    heap_.pop_back();
    ready_.push_back(std::move(callbacks_[slot]));
    free_slots_.push_back(slot);
  }
  reschedule();
  std::vector<Callback> run;
  run.swap(ready_);
  for (auto& fn : run) fn();
  run.clear();
  if (ready_.empty()) ready_.swap(run);  // keep the allocation
}

Time SharedBandwidth::busy_time() const {
  return heap_.empty() ? busy_ : busy_ + (sim_.now() - updated_);
}

nlohmann::json SharedBandwidth::stats() const {
  const Time busy = busy_time();
  const double elapsed = sim_.now().seconds();
  return {{"bytes", bytes_},
          {"requests", requests_},
          {"busy_ps", busy.ps()},
          {"capacity_bytes_per_s", capacity_.bytes_per_second()},
          {"utilisation", elapsed > 0 ? static_cast<double>(bytes_) / (capacity_.gb_per_second() * 1e9 * elapsed) : 0.0}};
}

}  // namespace moehub::gpu
