#include "gpu/host.h"

#include "gpu/gpu.h"

namespace moehub::gpu {

Host::Host(Simulator& sim, HostConfig config, uint32_t pid, TraceRecorder* trace)
    : sim_(sim), cfg_((config.validate(), config)), pid_(static_cast<int>(pid)), trace_(trace), lead_(cfg_.layer_lead) {
  if (trace_) track_ = trace_->track(pid_, "host");
}

Time Host::spend(Time host_time) {
  const Time covered = min(host_time, lead_);
  lead_ -= covered;
  return host_time - covered;
}

void Host::span(const std::string& name, const char* category, Time start) {
  if (trace_ && sim_.now() > start) trace_->span(pid_, track_, name, category, start, sim_.now());
}

KernelId Host::launch(Stream& stream, KernelSpec spec) {
  const KernelId id = stream.gpu().create_kernel(std::move(spec));
  ++ops_count_.kernels;
  push(Op{Op::Kind::Launch, &stream, id, 0, 0, Time::zero(), nullptr});
  return id;
}

KernelId Host::launch_grid(Stream& stream, KernelSpec spec) {
  const KernelId id = stream.gpu().create_kernel(std::move(spec));
  push(Op{Op::Kind::Launch, &stream, id, 0, 0, Time::zero(), nullptr});
  return id;
}

void Host::record(Stream& stream, EventId event) {
  ++ops_count_.events;
  push(Op{Op::Kind::Record, &stream, 0, event, 0, Time::zero(), nullptr});
}

void Host::wait(Stream& stream, EventId event) {
  ++ops_count_.events;
  push(Op{Op::Kind::Wait, &stream, 0, event, 0, Time::zero(), nullptr});
}

void Host::sync(Stream& stream, uint64_t bytes, Time host_work, Callback then) {
  ++ops_count_.syncs;
  if (bytes > 0) ++ops_count_.d2h_copies;
  push(Op{Op::Kind::Sync, &stream, 0, 0, bytes, host_work, std::move(then)});
}

void Host::h2d_sync(Stream& stream, uint64_t bytes, Callback then) {
  ++ops_count_.syncs;
  ++ops_count_.h2d_copies;
  push(Op{Op::Kind::Sync, &stream, 0, 0, bytes, Time::zero(), std::move(then), true});
}

void Host::work(Time duration, Callback then) {
  push(Op{Op::Kind::Work, nullptr, 0, 0, 0, duration, std::move(then)});
}

void Host::copy(Stream& stream, std::string label, uint64_t bytes, bool to_host) {
  ++(to_host ? ops_count_.d2h_copies : ops_count_.h2d_copies);
  const Time duration = cfg_.d2h_latency + cfg_.d2h_bandwidth.transfer_time(bytes);
  work(cfg_.issue_cost, [&stream, label = std::move(label), duration] { stream.copy(label, duration); });
}

void Host::framework_op(Callback then) {
  ++ops_count_.framework_ops;
  work(cfg_.framework_op_cost, std::move(then));
}

void Host::nccl_call(Callback then) {
  ++ops_count_.nccl_calls;
  work(cfg_.nccl_call_cost, std::move(then));
}

void Host::allocate(uint32_t count, Callback then) {
  ops_count_.allocations += count;
  work(cfg_.alloc_cost * static_cast<int64_t>(count), std::move(then));
}

void Host::autograd_function(Callback then) {
  ++ops_count_.autograd_functions;
  work(cfg_.autograd_function_cost, std::move(then));
}

void Host::call(Callback fn) { push(Op{Op::Kind::Call, nullptr, 0, 0, 0, Time::zero(), std::move(fn)}); }

void Host::push(Op op) {
  ops_.push_back(std::move(op));
  pump();
}

void Host::finish() {
  busy_ = false;
  pump();
}

void Host::pump() {
  while (!busy_ && !ops_.empty()) {
    Op op = std::move(ops_.front());
    ops_.pop_front();
    const Time start = sim_.now();
    switch (op.kind) {
      case Op::Kind::Call:
        if (op.then) op.then();
        continue;
      case Op::Kind::Work:
        busy_ = true;
        busy_time_ += op.duration;
        sim_.schedule_in(spend(op.duration), [this, start, then = std::move(op.then)]() mutable {
          span("host work", "host", start);
          if (then) then();
          finish();
        });
        continue;
      case Op::Kind::Launch:
      case Op::Kind::Record:
      case Op::Kind::Wait:
        busy_ = true;
        busy_time_ += cfg_.issue_cost;
        sim_.schedule_in(spend(cfg_.issue_cost), [this, start, kind = op.kind, s = op.stream, k = op.kernel, e = op.event] {
          if (kind == Op::Kind::Launch) {
            span("launch " + s->gpu().kernel_times(k).name, "launch", start);
            s->launch(k);
          } else if (kind == Op::Kind::Record) {
            span("event record", "launch", start);
            s->record(e);
          } else {
            span("event wait", "launch", start);
            s->wait(e);
          }
          finish();
        });
        continue;
      case Op::Kind::Sync: {
        busy_ = true;
        busy_time_ += cfg_.issue_cost;
        const Time copy = cfg_.d2h_latency + cfg_.d2h_bandwidth.transfer_time(op.bytes);
        const Time issue = spend(cfg_.issue_cost);
        lead_ = Time::zero();  // the host now waits for the GPU: whatever lead it had is gone
        sim_.schedule_in(issue, [this, start, copy, op = std::move(op)]() mutable {
          span(op.to_device ? "issue H2D copy" : "issue D2H copy", "launch", start);
          const Time blocked = sim_.now();
          op.stream->copy(op.to_device ? "H2D copy" : "D2H copy", copy, [this, blocked, work = op.duration, then = std::move(op.then)]() mutable {
            span("sync wait", "sync", blocked);
            const Time woke = sim_.now();
            busy_time_ += cfg_.sync_wakeup + work;
            sim_.schedule_in(cfg_.sync_wakeup, [this, woke, work, then = std::move(then)]() mutable {
              span("sync wakeup", "sync", woke);
              const Time worked = sim_.now();
              sim_.schedule_in(work, [this, worked, then = std::move(then)]() mutable {
                span("host work", "host", worked);
                if (then) then();
                finish();
              });
            });
          });
        });
        continue;
      }
    }
  }
}

}  // namespace moehub::gpu
