#pragma once
// One GPU: SMs with thread-block slots, a thread-block dispatcher, the memory system shared by
// all traffic, signals in device memory, streams and events. Kernels are grids of blocks that
// run BlockPrograms (see block_program.h); streams order them (see stream.h); a Host issues
// them with CPU costs (see host.h).
//
// Dispatch: active kernels are served in the order they started. A block becomes resident
// on an SM of the kernel's range when the SM has a free block slot, threads, shared memory
// and registers for it, and the kernel's own per-SM limit allows. A kernel that starts spreads
// its blocks one per SM per pass; a block that ends hands its SM to the earliest kernel with
// a block that fits. A block whose first step is a Gate or a Hardware wait is parked without a
// slot until released (the DAM's behaviour) and is then dispatched ahead of fresh blocks.

#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/block_program.h"
#include "gpu/coalesced_span.h"
#include "gpu/gpu_config.h"
#include "gpu/gpu_counters.h"
#include "gpu/kernel.h"
#include "gpu/shared_bandwidth.h"
#include "gpu/store_port.h"
#include "gpu/stream.h"
#include "sim/simulator.h"
#include "sim/trace_recorder.h"

namespace moehub::gpu {

// When a kernel was created, started (first block eligible, after the launch gap) and ended.
struct KernelTimes {
  std::string name;
  uint32_t blocks = 0;
  Time created;
  std::optional<Time> started;
  std::optional<Time> ended;
};

class Gpu {
 public:
  // `index` is the GPU's number in the system and its process id in the timeline.
  Gpu(Simulator& sim, GpuConfig config, uint32_t index = 0, TraceRecorder* trace = nullptr);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuConfig& config() const { return cfg_; }
  uint32_t index() const { return index_; }
  Simulator& sim() { return sim_; }
  TraceRecorder* trace() { return trace_; }

  // --- streams and events (owned by the GPU; references stay valid) ---
  Stream& create_stream(std::string name);
  // A one-shot event: recorded once by a stream, waited on by any number of streams.
  EventId create_event(std::string name);

  // --- kernels ---
  // Builds a kernel (validating its shape against the SM); a stream starts it.
  KernelId create_kernel(KernelSpec spec);
  const KernelTimes& kernel_times(KernelId id) const;
  // Resident blocks of `shape` one SM can hold (0: the block does not fit on an SM).
  uint32_t blocks_per_sm(const BlockShape& shape) const;
  // DAM interface: lets a block gated by Step::gate() be dispatched. May come before the block
  // has reached its gate (the release is remembered); a no-op for a block that is not gated.
  void release(KernelId kernel, uint32_t block);
  // DAM interface: finishes a block that has not started running (gated, waiting in
  // hardware mode or not yet dispatched) without running it.
  void retire(KernelId kernel, uint32_t block);

  // --- memory ---
  // Bytes moved through the shared memory system, e.g. network writes arriving at this GPU;
  // `on_done` runs when they are written.
  void memory_write(uint64_t bytes, Callback on_done) { memory_.request(bytes, std::move(on_done)); }
  // A write nobody waits for (data landing from the network): it takes its share of HBM.
  void memory_write(uint64_t bytes) { memory_.consume(bytes); }
  void memory_read(uint64_t bytes, Callback on_done) { memory_.request(bytes, std::move(on_done)); }
  // A read whose result the reader waits for (a table lookup, not a stream): its bytes take
  // their share of HBM, then the data returns after the DRAM load-to-use latency.
  void dependent_read(uint64_t bytes, Callback on_done) {
    memory_.request(bytes, [this, done = std::move(on_done)]() mutable { sim_.schedule_in(cfg_.dram_latency, std::move(done)); });
  }
  const SharedBandwidth& memory() const { return memory_; }

  // --- signals: counters in device memory ---
  SignalId create_signal(std::string name, int64_t initial = 0);
  // A local or remote store that bumps the counter; releases hardware-mode waiters at once.
  // Poll-mode waiters see it at their next poll.
  void signal_add(SignalId signal, int64_t delta);
  void signal_set(SignalId signal, int64_t value);
  int64_t signal_value(SignalId signal) const;

  // --- stores to peers ---
  void set_store_port(StorePort* port) { port_ = port; }
  // --- remote loads (Step::load) ---
  void set_load_port(LoadPort* port) { load_port_ = port; }

  const GpuCounters& counters() const { return n_; }
  // The counters, SM busy time and the memory model's statistics, for the report.
  nlohmann::json stats() const;

 private:
  friend class Stream;
  struct Kernel;
  struct Block;
  struct Sm {
    uint32_t blocks = 0;
    uint32_t threads = 0;
    uint64_t shared_memory = 0;
    uint64_t registers = 0;
    Time store_free;  // when the load/store unit can issue the next store
    Time busy_since;
    Time busy;        // time with at least one resident block
  };
  struct HardwareWaiter {
    int64_t threshold;
    uint64_t seq;
    KernelId kernel;
    BlockState state;
    Time since;  // when it parked
    bool after(const HardwareWaiter& o) const { return threshold != o.threshold ? threshold > o.threshold : seq > o.seq; }
  };
  // A block in a poll-mode wait that saw its flag low at `since` (gpu.poll_model = parked).
  struct PollWaiter {
    int64_t threshold;
    uint64_t seq;
    Block* block;
    Time since;
    bool after(const PollWaiter& o) const { return threshold != o.threshold ? threshold > o.threshold : seq > o.seq; }
  };
  struct Signal {
    std::string name;
    int64_t value = 0;
    std::vector<HardwareWaiter> waiters;  // min-heap on (threshold, seq)
    std::vector<PollWaiter> pollers;      // min-heap on (threshold, seq)
  };

  // Called by Stream.
  void start_kernel(KernelId id, Callback on_complete);

  // Dispatch (gpu.cpp).
  // The kernel's record while it is not complete; null once complete (its state is freed and
  // only its times stay, in done_times_).
  Kernel* live_kernel(KernelId id);
  bool known_kernel(KernelId id) const { return id < kernels_.size(); }
  // Frees a completed kernel's state, keeping its times: a run that enqueues many kernels up
  // front (FasterMoE: about 28 per step and GPU) would otherwise hold every one to the end.
  void free_kernel(KernelId id);
  bool fits(const Kernel& k, uint32_t sm) const;
  bool next_candidate(Kernel& k);
  void place(Kernel& k, uint32_t sm);
  void dispatch_all();
  void dispatch_on(uint32_t sm);
  void drain_dispatch();
  void park_on_signal(Kernel& k, const BlockState& st, SignalId signal, int64_t threshold);
  void unpark(Kernel& k, const BlockState& st, Time since);
  // A block that waited in hardware from `since` until now: counts the flag loads a poll-mode
  // waiter would have issued over the same wait.
  void count_hardware_wait(Time since);
  void maybe_complete(Kernel& k);
  void complete(Kernel& k);
  Signal& signal(SignalId id);

  // Block execution (gpu_blocks.cpp).
  void run_block(Block* b);
  bool execute(Block* b, const Step& s);
  void join(Block* b);
  void start_poll(Block* b, const Step& s);
  void poll_once(Block* b);
  void poll_latency_done(Block* b);
  void poll_check(Block* b);
  void park_poller(Block* b);
  void wake_poller(const PollWaiter& w);
  void issue_store(Block* b, const Step& s);
  void offer_store(Block* b);
  void issue_load(Block* b, const Step& s);
  void finish_block(Block* b);

  // Timeline (gpu.cpp).
  int group_track(uint32_t group);
  void trace_block_begin(Kernel& k, uint32_t sm);
  void trace_block_end(Kernel& k, uint32_t sm);
  void trace_flush(Kernel& k);
  void trace_gate_begin(Kernel& k);
  void trace_gate_end(Kernel& k);
  int waits_track();

  Simulator& sim_;
  GpuConfig cfg_;
  uint32_t index_;
  TraceRecorder* trace_;
  SharedBandwidth memory_;
  Bandwidth store_bandwidth_;
  StorePort* port_ = nullptr;
  LoadPort* load_port_ = nullptr;

  std::vector<Sm> sms_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // indexed by KernelId; null once complete and freed
  std::vector<KernelTimes> done_times_;           // indexed by KernelId: a freed kernel's times
  std::vector<Kernel*> active_;                   // started, not complete, in start order
  std::deque<Stream> streams_;
  std::deque<StreamEvent> events_;
  std::vector<Signal> signals_;

  std::deque<Block> block_pool_;
  std::vector<Block*> free_blocks_;

  bool dispatching_ = false;
  bool full_scan_pending_ = false;
  std::vector<uint32_t> sms_pending_;
  uint64_t waiter_seq_ = 0;

  // Statistics.
  GpuCounters n_;
  std::vector<int> group_tracks_;
  int waits_track_ = -1;
};

}  // namespace moehub::gpu
