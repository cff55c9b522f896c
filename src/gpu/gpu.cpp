// Gpu: construction, kernels, the thread-block dispatcher, signals and the timeline.
// Block execution (the steps themselves) is in gpu_blocks.cpp.

#include "gpu/gpu.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "gpu/gpu_internal.h"

namespace moehub::gpu {

Gpu::Gpu(Simulator& sim, GpuConfig config, uint32_t index, TraceRecorder* trace)
    : sim_(sim),
      cfg_((config.validate(), std::move(config))),
      index_(index),
      trace_(trace),
      memory_(sim, cfg_.hbm_achievable()),
      store_bandwidth_(cfg_.sm_store_bandwidth()),
      sms_(cfg_.sm_count) {
  if (trace_) trace_->name_process(static_cast<int>(index_), fmt::format("GPU {} ({})", index_, cfg_.name));
}

Gpu::~Gpu() = default;

Stream& Gpu::create_stream(std::string name) { return streams_.emplace_back(*this, std::move(name)); }

EventId Gpu::create_event(std::string name) {
  events_.push_back(StreamEvent{std::move(name), std::nullopt, {}});
  return static_cast<EventId>(events_.size() - 1);
}

uint32_t Gpu::blocks_per_sm(const BlockShape& s) const {
  if (s.threads == 0) throw std::logic_error("BlockShape: a thread block needs at least one thread");
  uint64_t n = std::min<uint64_t>(cfg_.max_blocks_per_sm, cfg_.max_threads_per_sm / s.threads);
  if (s.shared_memory > 0) n = std::min<uint64_t>(n, cfg_.shared_memory_per_sm / s.shared_memory);
  const uint64_t regs = static_cast<uint64_t>(s.threads) * s.registers_per_thread;
  if (regs > 0) n = std::min<uint64_t>(n, cfg_.registers_per_sm / regs);
  if (s.max_blocks_per_sm > 0) n = std::min<uint64_t>(n, s.max_blocks_per_sm);
  return static_cast<uint32_t>(n);
}

KernelId Gpu::create_kernel(KernelSpec spec) {
  if (!spec.program) throw std::logic_error(fmt::format("kernel '{}': no block program", spec.name));
  const uint32_t per_sm = blocks_per_sm(spec.shape);
  if (per_sm == 0) {
    throw std::logic_error(fmt::format("kernel '{}': a thread block ({} threads, {} B shared memory) does not fit on an SM",
                                       spec.name, spec.shape.threads, spec.shape.shared_memory));
  }
  if (spec.sms.first >= cfg_.sm_count || spec.sms.count > cfg_.sm_count - spec.sms.first) {
    throw std::logic_error(fmt::format("kernel '{}': SM range [{}, +{}) outside the GPU's {} SMs", spec.name,
                                       spec.sms.first, spec.sms.count, cfg_.sm_count));
  }
  auto k = std::make_unique<Kernel>();
  k->id = kernels_.size();
  k->sm_first = spec.sms.first;
  k->sm_count = spec.sms.count ? spec.sms.count : cfg_.sm_count - spec.sms.first;
  k->blocks = spec.persistent ? k->sm_count * per_sm : spec.blocks;
  k->registers_per_block = static_cast<uint64_t>(spec.shape.threads) * spec.shape.registers_per_thread;
  // The name lives in the times only (they outlive the kernel's state).
  k->times = KernelTimes{std::move(spec.name), k->blocks, sim_.now(), std::nullopt, std::nullopt};
  k->flags.assign(k->blocks, 0);
  k->spec = std::move(spec);
  kernels_.push_back(std::move(k));
  done_times_.emplace_back();
  return kernels_.back()->id;
}

Gpu::Kernel* Gpu::live_kernel(KernelId id) {
  if (id >= kernels_.size()) throw std::logic_error(fmt::format("unknown kernel id {}", id));
  return kernels_[id].get();
}

const KernelTimes& Gpu::kernel_times(KernelId id) const {
  if (id >= kernels_.size()) throw std::logic_error(fmt::format("unknown kernel id {}", id));
  return kernels_[id] ? kernels_[id]->times : done_times_[id];
}

// Only where nothing refers to the kernel any more: complete() outside a dispatch pass, or the
// end of the pass (drain_dispatch), whose active_ list held it until then.
void Gpu::free_kernel(KernelId id) {
  done_times_[id] = std::move(kernels_[id]->times);
  kernels_[id].reset();
}

void Gpu::start_kernel(KernelId id, Callback on_complete) {
  Kernel* live = live_kernel(id);
  if (!live) throw std::logic_error(fmt::format("kernel '{}' launched twice", done_times_[id].name));
  Kernel& k = *live;
  if (k.active || k.done) throw std::logic_error(fmt::format("kernel '{}' launched twice", k.times.name));
  k.active = true;
  if (k.spec.shape.max_blocks_per_sm > 0) k.per_sm.assign(cfg_.sm_count, 0);
  k.stream_done = std::move(on_complete);
  k.times.started = sim_.now();
  if (trace_) {
    const uint32_t groups = (cfg_.sm_count + cfg_.trace_sm_group - 1) / cfg_.trace_sm_group;
    k.run_spans.resize(groups);
    k.poll_spans.resize(groups);
  }
  active_.push_back(&k);
  if (k.finished == k.blocks) {
    complete(k);
    return;
  }
  dispatch_all();
}

// --- dispatch ---

bool Gpu::fits(const Kernel& k, uint32_t sm) const {
  const Sm& s = sms_[sm];
  const BlockShape& shape = k.spec.shape;
  return s.blocks < cfg_.max_blocks_per_sm && s.threads + shape.threads <= cfg_.max_threads_per_sm &&
         s.shared_memory + shape.shared_memory <= cfg_.shared_memory_per_sm &&
         s.registers + k.registers_per_block <= cfg_.registers_per_sm &&
         (k.per_sm.empty() || k.per_sm[sm] < shape.max_blocks_per_sm);
}

bool Gpu::next_candidate(Kernel& k) {
  while (!k.released.empty() && (k.flags[k.released.front().block] & kRetired)) k.released.pop_front();
  if (!k.released.empty() || k.head_valid) return true;
  while (k.next_block < k.blocks) {
    const uint32_t b = k.next_block++;
    if (k.flags[b] & kRetired) continue;  // counted as finished when retired
    BlockState st{k.id, b, 0, -1, 0};
    const Step first = k.spec.program->next(st);
    st.step = 1;
    if (first.kind == Step::Kind::Gate) {
      if (k.flags[b] & kPreReleased) {
        k.released.push_back(st);
        return true;
      }
      k.flags[b] |= kGated;
      k.gated.emplace(b, Kernel::GatedBlock{st, sim_.now()});
      ++k.parked;
      trace_gate_begin(k);
      continue;
    }
    if (first.kind == Step::Kind::Wait && first.mode == WaitMode::Hardware) {
      if (signal(first.signal).value >= first.value) {
        k.released.push_back(st);
        return true;
      }
      park_on_signal(k, st, first.signal, first.value);
      continue;
    }
    k.head = st;
    k.head_step = first;
    k.head_valid = true;
    return true;
  }
  return false;
}

void Gpu::place(Kernel& k, uint32_t sm) {
  BlockState st;
  bool has_first = false;
  Step first;
  if (!k.released.empty()) {
    st = k.released.front();
    k.released.pop_front();
  } else {
    st = k.head;
    first = k.head_step;
    has_first = true;
    k.head_valid = false;
  }
  st.sm = static_cast<int32_t>(sm);
  Sm& s = sms_[sm];
  if (s.blocks == 0) s.busy_since = sim_.now();
  ++s.blocks;
  s.threads += k.spec.shape.threads;
  s.shared_memory += k.spec.shape.shared_memory;
  s.registers += k.registers_per_block;
  if (!k.per_sm.empty()) ++k.per_sm[sm];
  ++k.resident;
  k.flags[st.block] |= kStarted;
  ++n_.blocks_run;

  Block* b;
  if (free_blocks_.empty()) {
    b = &block_pool_.emplace_back();
  } else {
    b = free_blocks_.back();
    free_blocks_.pop_back();
  }
  b->kernel = &k;
  b->state = st;
  b->joins = 0;
  trace_block_begin(k, sm);
  if (!has_first || execute(b, first)) run_block(b);
}

void Gpu::dispatch_all() {
  full_scan_pending_ = true;
  if (!dispatching_) drain_dispatch();
}

void Gpu::dispatch_on(uint32_t sm) {
  sms_pending_.push_back(sm);
  if (!dispatching_) drain_dispatch();
}

// Placing a block runs its first steps, which may end blocks and free SMs again; those
// dispatches are queued here instead of recursing, so the stack stays flat.
void Gpu::drain_dispatch() {
  dispatching_ = true;
  while (full_scan_pending_ || !sms_pending_.empty()) {
    if (full_scan_pending_) {
      full_scan_pending_ = false;
      for (size_t i = 0; i < active_.size(); ++i) {
        Kernel& k = *active_[i];
        bool placed = true;
        while (placed && !k.done) {
          placed = false;
          for (uint32_t j = 0; j < k.sm_count && !k.done; ++j) {
            const uint32_t sm = k.sm_first + j;
            if (!fits(k, sm)) continue;
            if (!next_candidate(k)) break;
            place(k, sm);
            placed = true;
          }
        }
      }
    } else {
      const uint32_t sm = sms_pending_.back();
      sms_pending_.pop_back();
      for (size_t i = 0; i < active_.size(); ++i) {
        Kernel& k = *active_[i];
        if (sm < k.sm_first || sm >= k.sm_first + k.sm_count) continue;
        while (!k.done && fits(k, sm) && next_candidate(k)) place(k, sm);
      }
    }
  }
  std::vector<KernelId> done;
  for (const Kernel* k : active_) {
    if (k->done) done.push_back(k->id);
  }
  active_.erase(std::remove_if(active_.begin(), active_.end(), [](const Kernel* k) { return k->done; }), active_.end());
  dispatching_ = false;
  for (KernelId id : done) free_kernel(id);
}

void Gpu::maybe_complete(Kernel& k) {
  if (k.active && !k.done && k.finished == k.blocks) complete(k);
}

void Gpu::complete(Kernel& k) {
  k.done = true;
  k.times.ended = sim_.now();
  ++n_.kernels;
  trace_flush(k);
  // Inside a dispatch pass active_ keeps the kernel until the pass ends, which frees it.
  const bool in_pass = dispatching_;
  if (!in_pass) {
    active_.erase(std::remove(active_.begin(), active_.end(), &k), active_.end());
  }
  k.released.clear();
  k.gated.clear();
  const KernelId id = k.id;
  Callback on_done = std::move(k.spec.on_done);
  Callback stream_done = std::move(k.stream_done);
  if (on_done) on_done();
  if (stream_done) stream_done();
  if (!in_pass) free_kernel(id);
}

void Gpu::release(KernelId id, uint32_t block) {
  const KernelTimes& t = kernel_times(id);
  if (block >= t.blocks) throw std::logic_error(fmt::format("kernel '{}': no block {}", t.name, block));
  Kernel* live = live_kernel(id);
  if (!live || live->done) return;
  Kernel& k = *live;
  uint8_t& f = k.flags[block];
  if (!(f & kGated)) {
    f |= kPreReleased;
    return;
  }
  f &= static_cast<uint8_t>(~kGated);
  --k.parked;
  trace_gate_end(k);
  auto it = k.gated.find(block);
  k.released.push_back(it->second.state);
  count_hardware_wait(it->second.since);
  k.gated.erase(it);
  if (k.active) dispatch_all();
}

void Gpu::retire(KernelId id, uint32_t block) {
  const KernelTimes& t = kernel_times(id);
  if (block >= t.blocks) throw std::logic_error(fmt::format("kernel '{}': no block {}", t.name, block));
  Kernel* live = live_kernel(id);
  if (!live || live->done) throw std::logic_error(fmt::format("kernel '{}': retire after completion", t.name));
  Kernel& k = *live;
  uint8_t& f = k.flags[block];
  if (f & (kRetired | kStarted)) {
    throw std::logic_error(fmt::format("kernel '{}': block {} already {}", k.times.name, block,
                                       (f & kRetired) ? "retired" : "started"));
  }
  if (f & kGated) k.gated.erase(block);
  if (f & (kGated | kSignalParked)) {
    --k.parked;
    trace_gate_end(k);
  }
  if (k.head_valid && k.head.block == block) k.head_valid = false;
  f = static_cast<uint8_t>((f & ~(kGated | kSignalParked)) | kRetired);
  ++k.finished;
  ++n_.blocks_retired;
  maybe_complete(k);
}

// --- signals ---

Gpu::Signal& Gpu::signal(SignalId id) {
  if (id >= signals_.size()) throw std::logic_error(fmt::format("unknown signal id {}", id));
  return signals_[id];
}

SignalId Gpu::create_signal(std::string name, int64_t initial) {
  signals_.push_back(Signal{std::move(name), initial, {}, {}});
  return static_cast<SignalId>(signals_.size() - 1);
}

int64_t Gpu::signal_value(SignalId id) const {
  if (id >= signals_.size()) throw std::logic_error(fmt::format("unknown signal id {}", id));
  return signals_[id].value;
}

void Gpu::signal_set(SignalId id, int64_t value) {
  signal(id).value = value;
  signal_add(id, 0);
}

void Gpu::signal_add(SignalId id, int64_t delta) {
  Signal& s = signal(id);
  s.value += delta;
  const auto cmp = [](const HardwareWaiter& a, const HardwareWaiter& b) { return a.after(b); };
  bool released = false;
  while (!s.waiters.empty() && s.waiters.front().threshold <= s.value) {
    std::pop_heap(s.waiters.begin(), s.waiters.end(), cmp);
    const HardwareWaiter w = s.waiters.back();
    s.waiters.pop_back();
    if (Kernel* k = live_kernel(w.kernel)) unpark(*k, w.state, w.since);  // else complete: retired while parked
    released = true;
  }
  const auto poll_cmp = [](const PollWaiter& a, const PollWaiter& b) { return a.after(b); };
  while (!s.pollers.empty() && s.pollers.front().threshold <= s.value) {
    std::pop_heap(s.pollers.begin(), s.pollers.end(), poll_cmp);
    const PollWaiter w = s.pollers.back();
    s.pollers.pop_back();
    wake_poller(w);
  }
  if (released) dispatch_all();
}

void Gpu::park_on_signal(Kernel& k, const BlockState& st, SignalId id, int64_t threshold) {
  Signal& s = signal(id);
  s.waiters.push_back(HardwareWaiter{threshold, waiter_seq_++, k.id, st, sim_.now()});
  std::push_heap(s.waiters.begin(), s.waiters.end(),
                 [](const HardwareWaiter& a, const HardwareWaiter& b) { return a.after(b); });
  k.flags[st.block] |= kSignalParked;
  ++k.parked;
  trace_gate_begin(k);
}

void Gpu::unpark(Kernel& k, const BlockState& st, Time since) {
  if (k.done || (k.flags[st.block] & kRetired)) return;  // retired while parked
  k.flags[st.block] &= static_cast<uint8_t>(~kSignalParked);
  --k.parked;
  trace_gate_end(k);
  k.released.push_back(st);
  count_hardware_wait(since);
}

void Gpu::count_hardware_wait(Time since) {
  ++n_.hardware_waits;
  const Time period = cfg_.poll_latency + cfg_.poll_sleep;
  n_.poll_loads_avoided += static_cast<uint64_t>((sim_.now() - since).ps() / period.ps()) + 1;
}

// --- timeline ---

int Gpu::group_track(uint32_t group) {
  if (group_tracks_.size() <= group) group_tracks_.resize(group + 1, -1);
  if (group_tracks_[group] < 0) {
    const uint32_t first = group * cfg_.trace_sm_group;
    const uint32_t last = std::min(cfg_.sm_count, first + cfg_.trace_sm_group) - 1;
    group_tracks_[group] = trace_->track(static_cast<int>(index_), fmt::format("SMs {}-{}", first, last));
  }
  return group_tracks_[group];
}

void Gpu::trace_block_begin(Kernel& k, uint32_t sm) {
  if (!trace_) return;
  const uint32_t g = sm / cfg_.trace_sm_group;
  k.run_spans[g].begin(sim_.now(), [&](Time a, Time b) {
    trace_->span(static_cast<int>(index_), group_track(g), k.times.name, "blocks", a, b);
  });
}

void Gpu::trace_block_end(Kernel& k, uint32_t sm) {
  if (!trace_) return;
  k.run_spans[sm / cfg_.trace_sm_group].end(sim_.now());
}

void Gpu::trace_gate_begin(Kernel& k) {
  if (!trace_) return;
  k.gate_span.begin(sim_.now(), [&](Time a, Time b) {
    trace_->span(static_cast<int>(index_), waits_track(), k.times.name + " gated", "wait", a, b);
  });
}

void Gpu::trace_gate_end(Kernel& k) {
  if (trace_) k.gate_span.end(sim_.now());
}

int Gpu::waits_track() {
  if (waits_track_ < 0) waits_track_ = trace_->track(static_cast<int>(index_), "hardware waits (not resident)");
  return waits_track_;
}

void Gpu::trace_flush(Kernel& k) {
  if (!trace_) return;
  const int pid = static_cast<int>(index_);
  k.gate_span.flush([&](Time a, Time b) { trace_->span(pid, waits_track(), k.times.name + " gated", "wait", a, b); });
  for (uint32_t g = 0; g < k.run_spans.size(); ++g) {
    k.run_spans[g].flush([&](Time a, Time b) { trace_->span(pid, group_track(g), k.times.name, "blocks", a, b); });
    k.poll_spans[g].flush(
        [&](Time a, Time b) { trace_->span(pid, group_track(g), k.times.name + " poll wait", "wait", a, b); });
  }
}

nlohmann::json Gpu::stats() const {
  Time sm_busy = Time::zero();
  for (const Sm& s : sms_) sm_busy += s.blocks > 0 ? s.busy + (sim_.now() - s.busy_since) : s.busy;
  nlohmann::json j = GpuCounters::table().to_json(n_);
  j["sm_busy_ps"] = sm_busy.ps();
  j["memory"] = memory_.stats();
  return j;
}

}  // namespace moehub::gpu
