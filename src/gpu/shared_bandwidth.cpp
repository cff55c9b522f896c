#include "gpu/shared_bandwidth.h"

#include <algorithm>
#include <stdexcept>

#include "sim/wide_divide.h"

namespace moehub::gpu {
namespace {
constexpr unsigned __int128 kPicobytesPerByte = 1000000000000ULL;
}

SharedBandwidth::SharedBandwidth(Simulator& sim, Bandwidth capacity) : sim_(sim), capacity_(capacity) {
  if (capacity.bytes_per_second() == 0) throw std::logic_error("SharedBandwidth: zero capacity");
}

SharedBandwidth::Picobytes SharedBandwidth::served(Time span, size_t n) const {
  return divide_wide(static_cast<unsigned __int128>(capacity_.bytes_per_second()) * static_cast<uint64_t>(span.ps()), n);
}

size_t SharedBandwidth::first_unserved(size_t i, Picobytes v) const {
  while (i < unwatched_.size() && unwatched_[i] <= v) ++i;
  return i;
}

void SharedBandwidth::step_to(Time to, size_t n) {
  virtual_ += served(to - updated_, n);
  busy_ += to - updated_;
  updated_ = to;
}

Time SharedBandwidth::departure(Time from, Picobytes v, Picobytes finish, size_t n) const {
  // A request arriving at the very instant of a pending departure (an earlier event at the same
  // time) advances virtual time up to or past the front's finish: it departs now.
  const Picobytes remaining = finish > v ? finish - v : 0;
  const uint64_t rate = capacity_.bytes_per_second();
  return from + Time::from_ps(static_cast<int64_t>(divide_wide_up(remaining * n, rate)));
}

void SharedBandwidth::advance() {
  const Time now = sim_.now();
  if (now == updated_) return;
  // Unwatched requests that finished since the last update leave at the times their departure
  // events would have had: the service is stepped to each of those instants in turn.
  while (unwatched_head_ < unwatched_.size()) {
    const size_t n = heap_.size() + unwatched_.size() - unwatched_head_;
    const Time at = departure(updated_, virtual_, unwatched_[unwatched_head_], n);
    if (at > now) break;
    step_to(at, n);
    unwatched_head_ = first_unserved(unwatched_head_, virtual_);
  }
  if (unwatched_head_ == unwatched_.size()) {
    unwatched_.clear();
    unwatched_head_ = 0;
  }
  const size_t n = heap_.size() + unwatched_.size() - unwatched_head_;
  if (n > 0) {
    step_to(now, n);
  } else {
    updated_ = now;
  }
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
  heap_.push_back(Pending{virtual_ + static_cast<Picobytes>(bytes) * kPicobytesPerByte, seq_++, callbacks_.put(std::move(done))});
  std::push_heap(heap_.begin(), heap_.end(), cmp);
  reschedule();
}

void SharedBandwidth::consume(uint64_t bytes, uint64_t requests) {
  advance();
  requests_ += requests;
  bytes_ += bytes;
  if (bytes == 0) return;
  const Picobytes finish = virtual_ + static_cast<Picobytes>(bytes) * kPicobytesPerByte;
  // Equal sizes arrive in finish order: the insertion is an append in the common case.
  unwatched_.insert(std::upper_bound(unwatched_.begin() + static_cast<std::ptrdiff_t>(unwatched_head_), unwatched_.end(), finish),
                    finish);
  reschedule();
}

SharedBandwidth::Ticket SharedBandwidth::consume_tracked(uint64_t bytes) {
  consume(bytes);  // advances virtual time to now, then adds the bytes
  // request() numbers only requests that take time.
  const uint64_t seq = bytes == 0 ? seq_ : seq_++;
  return Ticket{virtual_ + static_cast<Picobytes>(bytes) * kPicobytesPerByte, seq};
}

bool SharedBandwidth::served_by_now(const Ticket& ticket) const {
  if (ticket.finish <= virtual_) return true;
  Time t = updated_;
  Picobytes v = virtual_;
  size_t n = heap_.size() + unwatched_.size() - unwatched_head_;
  size_t i = unwatched_head_;
  // Nothing arrived since updated_ (an arrival advances the service), so at most n requests
  // shared it, and each of the at most (unwatched + 1) steps advance() would take rounds down by
  // under a picobyte: the service by now is at least C x span / n - steps. If that covers the
  // ticket, the exact steps below would too (compared by multiplying, without a division).
  const Picobytes steps = static_cast<Picobytes>(unwatched_.size() - unwatched_head_ + 1);
  const Picobytes span = static_cast<Picobytes>((sim_.now() - t).ps());
  if ((ticket.finish - v + steps) * n <= static_cast<Picobytes>(capacity_.bytes_per_second()) * span) return true;
  // The same steps as advance(): through each unwatched departure up to now, then to now.
  while (ticket.finish > v && i < unwatched_.size()) {
    const Time at = departure(t, v, unwatched_[i], n);
    if (at > sim_.now()) break;
    v += served(at - t, n);
    const size_t j = first_unserved(i, v);
    n -= j - i;
    i = j;
    t = at;
  }
  if (ticket.finish > v && n > 0) v += served(sim_.now() - t, n);
  return ticket.finish <= v;
}

// No advance(): stepping the service here would round differently from request()'s schedule.
// Moving the bytes from unwatched to watched changes neither n nor anyone's finish.
void SharedBandwidth::watch(const Ticket& ticket, Callback done) {
  const auto first = unwatched_.begin() + static_cast<std::ptrdiff_t>(unwatched_head_);
  const auto it = std::lower_bound(first, unwatched_.end(), ticket.finish);
  if (it == unwatched_.end() || *it != ticket.finish) throw std::logic_error("SharedBandwidth::watch: ticket already served");
  unwatched_.erase(it);
  const auto cmp = [](const Pending& a, const Pending& b) { return a.after(b); };
  heap_.push_back(Pending{ticket.finish, ticket.seq, callbacks_.put(std::move(done))});
  std::push_heap(heap_.begin(), heap_.end(), cmp);
  reschedule();
}

// The departure event serves the first watched request. Unwatched ones that finish before it
// are stepped through as advance() will step through them, so the event lands at the instant
// the old one-event-per-departure schedule would have reached.
void SharedBandwidth::reschedule() {
  if (next_.valid()) sim_.cancel(next_);
  next_ = EventHandle{};
  if (heap_.empty()) return;
  const Picobytes watched = heap_.front().finish;
  Time t = updated_;
  Picobytes v = virtual_;
  size_t n = heap_.size() + unwatched_.size() - unwatched_head_;
  size_t i = unwatched_head_;
  for (;;) {
    const Picobytes next = i < unwatched_.size() ? std::min(watched, unwatched_[i]) : watched;
    const Time at = departure(t, v, next, n);
    const Picobytes v_at = v + served(at - t, n);
    if (watched <= v_at) {
      next_ = sim_.schedule_at(at, [this] { on_departure(); });
      return;
    }
    const size_t j = first_unserved(i, v_at);
    n -= j - i;
    i = j;
    t = at;
    v = v_at;
  }
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
    ready_.push_back(callbacks_.take(slot));
  }
  unwatched_head_ = first_unserved(unwatched_head_, virtual_);
  reschedule();
  std::vector<Callback> run;
  run.swap(ready_);
  for (auto& fn : run) fn();
  run.clear();
  if (ready_.empty()) ready_.swap(run);  // keep the allocation
}

Time SharedBandwidth::busy_time() const {
  if (!heap_.empty()) return busy_ + (sim_.now() - updated_);
  // Only unwatched requests, if any: busy until the last of them departs, or until now.
  Time t = updated_;
  Picobytes v = virtual_;
  size_t n = unwatched_.size() - unwatched_head_;
  for (size_t i = unwatched_head_; i < unwatched_.size();) {
    const Time at = departure(t, v, unwatched_[i], n);
    if (at >= sim_.now()) return busy_ + (sim_.now() - updated_);
    v += served(at - t, n);
    const size_t j = first_unserved(i, v);
    n -= j - i;
    i = j;
    t = at;
  }
  return busy_ + (t - updated_);
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
