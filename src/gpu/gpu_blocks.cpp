// Gpu: what a resident thread block does, step by step.

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

namespace moehub::gpu {

// Fetches and executes steps until one takes time (or the block ends).
void Gpu::run_block(Block* b) {
  for (;;) {
    const Step s = b->kernel->spec.program->next(b->state);
    ++b->state.step;
    if (!execute(b, s)) return;
  }
}

// Returns true when the step completed at once and the block should continue.
bool Gpu::execute(Block* b, const Step& s) {
  switch (s.kind) {
    case Step::Kind::Compute:
      sim_.schedule_in(s.duration, [this, b] { run_block(b); });
      return false;
    case Step::Kind::Memory:
      memory_.request(s.bytes, [this, b] { run_block(b); });
      return false;
    case Step::Kind::ComputeMemory:
      // A pipelined tile: the tensor work and the operand traffic overlap; the slower one
      // decides when the step ends.
      b->joins = 2;
      sim_.schedule_in(s.duration, [this, b] { join(b); });
      memory_.request(s.bytes, [this, b] { join(b); });
      return false;
    case Step::Kind::Wait:
      if (s.mode == WaitMode::Hardware) {
        throw std::logic_error(fmt::format("kernel '{}': a hardware-mode wait must be a block's first step",
                                           b->kernel->times.name));
      }
      start_poll(b, s);
      return false;
    case Step::Kind::Gate:
      throw std::logic_error(fmt::format("kernel '{}': a gate must be a block's first step", b->kernel->times.name));
    case Step::Kind::Store:
      issue_store(b, s);
      return false;
    case Step::Kind::Load:
      issue_load(b, s);
      return false;
    case Step::Kind::SignalAdd:
      signal_add(s.signal, s.value);
      return true;
    case Step::Kind::Done:
      finish_block(b);
      return false;
  }
  return false;
}

void Gpu::join(Block* b) {
  if (--b->joins == 0) run_block(b);
}

// --- poll-mode waits: the block stays resident and loads the flag until it sees enough ---

void Gpu::start_poll(Block* b, const Step& s) {
  b->step = s;
  if (trace_) {
    const uint32_t g = static_cast<uint32_t>(b->state.sm) / cfg_.trace_sm_group;
    Kernel& k = *b->kernel;
    k.poll_spans[g].begin(sim_.now(), [&](Time from, Time to) {
      trace_->span(static_cast<int>(index_), group_track(g), k.times.name + " poll wait", "wait", from, to);
    });
  }
  poll_once(b);
}

// One poll is a load: it returns after the L2 round trip and after its bytes have passed
// through the shared memory system, whichever is later; it sees the value at that moment.
// The bytes nearly always pass first, so the load is tracked without an event of its own and
// watched only if it is still in flight when the latency has elapsed (the same service and
// completion instant as a watched request; docs/performance/gpu-model.md).
void Gpu::poll_once(Block* b) {
  ++n_.polls;
  b->poll_load = memory_.consume_tracked(cfg_.poll_bytes);
  sim_.schedule_in(cfg_.poll_latency, [this, b] { poll_latency_done(b); });
}

void Gpu::poll_latency_done(Block* b) {
  if (memory_.served_by_now(b->poll_load)) {
    poll_check(b);
  } else {
    memory_.watch(b->poll_load, [this, b] { poll_check(b); });
  }
}

// The poll that just completed sees the flag's value now.
void Gpu::poll_check(Block* b) {
  if (signal(b->step.signal).value >= b->step.value) {
    if (trace_) b->kernel->poll_spans[static_cast<uint32_t>(b->state.sm) / cfg_.trace_sm_group].end(sim_.now());
    run_block(b);
    return;
  }
  if (cfg_.poll_model == GpuConfig::PollModel::Parked) {
    park_poller(b);
  } else if (cfg_.poll_sleep > Time::zero()) {
    sim_.schedule_in(cfg_.poll_sleep, [this, b] { poll_once(b); });
  } else {
    poll_once(b);
  }
}

// gpu.poll_model = parked: the block stays resident (it holds its slot) but issues no loads
// until a signal_add brings the flag to its value; wake_poller then finds the poll that sees it.
void Gpu::park_poller(Block* b) {
  Signal& s = signal(b->step.signal);
  s.pollers.push_back(PollWaiter{b->step.value, waiter_seq_++, b, sim_.now()});
  std::push_heap(s.pollers.begin(), s.pollers.end(), [](const PollWaiter& x, const PollWaiter& y) { return x.after(y); });
}

// Parked at `since` (a poll completed there), the block would have issued its k-th poll at
// since + (k-1) P + sleep and seen the flag at since + k P (P = poll_latency + poll_sleep; a
// poll is assumed to end after its latency, not after its bytes: the reduction). The first
// poll completing at or after now sees the flag. If that poll would not yet have been issued
// (now falls in a sleep), it is issued for real when due; otherwise the block continues at its
// completion. The loads issued in between go to the memory model as one unwatched write now.
void Gpu::wake_poller(const PollWaiter& w) {
  const Time now = sim_.now();
  const int64_t period = (cfg_.poll_latency + cfg_.poll_sleep).ps();
  const int64_t k = std::max<int64_t>(1, ((now - w.since).ps() + period - 1) / period);
  const Time issue = w.since + Time::from_ps(period * (k - 1)) + cfg_.poll_sleep;
  const bool issue_for_real = issue >= now;
  const auto skipped = static_cast<uint64_t>(issue_for_real ? k - 1 : k);
  if (skipped > 0) {
    n_.polls += skipped;
    memory_.consume(skipped * cfg_.poll_bytes, skipped);
  }
  Block* b = w.block;
  if (issue_for_real) {
    sim_.schedule_at(issue, [this, b] { poll_once(b); });
  } else {
    sim_.schedule_at(w.since + Time::from_ps(period * k), [this, b] { poll_check(b); });
  }
}

// --- stores to peers: the SM's load/store unit issues them one after another at
// gpu.sm_store_bytes_per_clock; each then goes to the StorePort, which may push back ---

void Gpu::issue_store(Block* b, const Step& s) {
  if (!port_) {
    throw std::logic_error(fmt::format("kernel '{}': store to GPU {} but GPU {} has no store port",
                                       b->kernel->times.name, s.dst_gpu, index_));
  }
  b->step = s;
  Sm& sm = sms_[static_cast<uint32_t>(b->state.sm)];
  const Time start = max(sim_.now(), sm.store_free);
  sm.store_free = start + store_bandwidth_.transfer_time(s.bytes);
  sim_.schedule_at(sm.store_free, [this, b] { offer_store(b); });
}

void Gpu::offer_store(Block* b) {
  const StoreRequest r{index_,         b->step.dst_gpu, b->step.bytes, b->step.tag, static_cast<uint32_t>(b->state.sm),
                       b->kernel->id, b->state.block};
  if (!port_->try_store(r, [this, b] { offer_store(b); })) {
    ++n_.store_refusals;
    return;
  }
  ++n_.stores;
  n_.store_bytes += r.bytes;
  run_block(b);
}

// --- remote loads: the requests leave through the SM's load/store unit at the same rate as
// stores (the returning sectors pass the same L1 path; assumption, docs/gpu.md); the block
// stays resident until the LoadPort reports the last byte in ---

void Gpu::issue_load(Block* b, const Step& s) {
  if (!load_port_) {
    throw std::logic_error(fmt::format("kernel '{}': load from GPU {} but GPU {} has no load port",
                                       b->kernel->times.name, s.dst_gpu, index_));
  }
  Sm& sm = sms_[static_cast<uint32_t>(b->state.sm)];
  const Time start = max(sim_.now(), sm.store_free);
  sm.store_free = start + store_bandwidth_.transfer_time(s.bytes);
  const LoadRequest r{index_, s.dst_gpu, s.bytes, s.tag, static_cast<uint32_t>(b->state.sm), b->kernel->id, b->state.block};
  sim_.schedule_at(sm.store_free, [this, b, r] {
    ++n_.loads;
    n_.load_bytes += r.bytes;
    load_port_->load(r, [this, b] { run_block(b); });
  });
}

void Gpu::finish_block(Block* b) {
  Kernel& k = *b->kernel;
  const auto sm = static_cast<uint32_t>(b->state.sm);
  Sm& s = sms_[sm];
  --s.blocks;
  if (s.blocks == 0) s.busy += sim_.now() - s.busy_since;
  s.threads -= k.spec.shape.threads;
  s.shared_memory -= k.spec.shape.shared_memory;
  s.registers -= k.registers_per_block;
  if (!k.per_sm.empty()) --k.per_sm[sm];
  --k.resident;
  ++k.finished;
  trace_block_end(k, sm);
  b->kernel = nullptr;
  free_blocks_.push_back(b);
  maybe_complete(k);
  dispatch_on(sm);
}

}  // namespace moehub::gpu
