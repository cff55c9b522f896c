#include "platform/cluster.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

#include "platform/memory_receiver.h"
#include "platform/network_store_port.h"
#include "sim/error.h"

namespace moehub {

Cluster::Cluster(Simulator& sim, const Config& config, const Workload& workload, TraceRecorder* trace,
                 FunctionalData* functional, const NetworkFactory& make_net)
    : sim_(sim),
      config_(config),
      workload_(workload),
      trace_(trace),
      functional_(functional),
      gpu_config_(gpu::GpuConfig::from(config)),
      host_config_(gpu::HostConfig::from(config)),
      run_(RunParams::from(config)),
      kernels_(KernelParams::from(config)),
      nccl_(NcclConfig::from(config)) {
  const int n = static_cast<int>(workload.tokens().gpus());
  network_ = make_net(NetConfig::from(config, n), sim, trace);
  nccl_proxies_ = std::make_unique<NcclProxies>(sim, n);
  activity_.resize(n);
  phases_.resize(n);
  for (int g = 0; g < n; ++g) {
    gpus_.push_back(std::make_unique<gpu::Gpu>(sim, gpu_config_, static_cast<uint32_t>(g), trace));
    hosts_.push_back(std::make_unique<gpu::Host>(sim, host_config_, static_cast<uint32_t>(g), trace));
    streams_.push_back(&gpus_.back()->create_stream("compute"));
    if (trace) trace->name_process(g, fmt::format("GPU {}", g));
  }
  for (int g = 0; g < n; ++g) {
    ports_.push_back(std::make_unique<NetworkStorePort>(*this, g));
    gpus_[g]->set_store_port(ports_.back().get());
    receivers_.push_back(std::make_unique<MemoryReceiver>(*this, g));
    receiver_of_.push_back(receivers_.back().get());
    network_->set_receiver(g, receivers_.back().get());
  }
}

Cluster::~Cluster() = default;

gpu::KernelId Cluster::launch(int g, gpu::Stream& stream, Activity what, gpu::KernelSpec spec) {
  const gpu::KernelId id = host(g).launch(stream, std::move(spec));
  launched_.push_back({g, id, what});
  return id;
}

gpu::KernelId Cluster::launch_grid(int g, gpu::Stream& stream, Activity what, gpu::KernelSpec spec) {
  const gpu::KernelId id = host(g).launch_grid(stream, std::move(spec));
  launched_.push_back({g, id, what});
  return id;
}

void Cluster::host_sync(int g, gpu::Stream& stream, uint64_t bytes, Time host_work, Callback then) {
  auto start = std::make_shared<Time>();
  host(g).call([this, start] { *start = sim_.now(); });
  host(g).sync(stream, bytes, host_work, [this, g, start, then = std::move(then)]() mutable {
    log(g, Activity::Synchronisation, *start, sim_.now());
    if (then) then();
  });
}

void Cluster::set_receiver(int g, PacketReceiver* receiver) {
  receiver_of_.at(g) = receiver;
  network_->set_receiver(g, receiver);
}

void Cluster::deliver_write(int dst, uint64_t bytes, uint64_t tag, Callback then) {
  if (tag == 0 && !then) {
    gpu(dst).memory_write(bytes);  // nobody waits for it: no event of its own
    return;
  }
  const auto signal = [this, dst, bytes, tag] {
    if (tag != 0) gpu(dst).signal_add(static_cast<gpu::SignalId>(tag - 1), static_cast<int64_t>(bytes));
  };
  if (!then) {  // the common case (a tagged store): small enough for a callback's inline storage
    gpu(dst).memory_write(bytes, signal);
    return;
  }
  gpu(dst).memory_write(bytes, [signal, then = std::move(then)]() mutable {
    signal();
    then();
  });
}

void Cluster::layer_done(int g) {
  PhaseMarks& p = phases(g);
  if (p.done) throw std::logic_error(fmt::format("GPU {} finished the layer twice", g));
  p.done = sim_.now();
}

bool Cluster::all_done() const {
  for (const auto& p : phases_) {
    if (!p.done) return false;
  }
  return true;
}

void Cluster::run_to_completion(const std::string& system, const Progress& progress) {
  const Time limit = run_.time_limit;
  if (progress) {
    // Slices end where the next event would have run anyway: the order of events is unchanged.
    while (sim_.events_pending() > 0 && sim_.now() < limit) {
      sim_.run_until(std::min(limit, sim_.now() + kProgressSlice));
      progress(sim_.now(), sim_.events_executed());
    }
  } else {
    sim_.run_until(limit);
  }
  if (sim_.events_pending() > 0) {
    // The user's limit was reached: a layer slower than the limit (slow clocks, long latencies)
    // or one that never ends (a flag no one sets); either way the run stops here, as asked.
    throw UserError("run.time_limit",
                    fmt::format("system {} was still running after run.time_limit = {} us of simulated time ({} events "
                                "executed): raise the limit if the layer is only slow; a layer of milliseconds that "
                                "reaches it is stuck polling or livelocked",
                                system, limit.us(), sim_.events_executed()));
  }
  finish();
}

void Cluster::finish() {
  if (finished_) return;
  finished_ = true;
  for (const Launched& l : launched_) {
    const gpu::KernelTimes& t = gpu(l.gpu).kernel_times(l.id);
    if (t.started && t.ended) log(l.gpu, l.what, *t.started, *t.ended);
  }
  network_->flush_trace();
  if (checking()) check_conservation();
}

bool Cluster::checking() const {
#ifdef NDEBUG
  return run_.check;
#else
  return true;  // debug and sanitizer builds check every run
#endif
}

void Cluster::check_conservation() const {
  std::vector<std::string> v = network_->conservation_violations();
  for (const Launched& l : launched_) {
    const gpu::KernelTimes& t = gpu_at(l.gpu).kernel_times(l.id);
    if (!t.ended) {
      v.push_back(fmt::format("kernel '{}' on GPU {} did not finish", t.name, l.gpu));
      break;
    }
  }
  for (int g = 0; g < gpus(); ++g) {
    if (!phases_.at(g).done) {
      v.push_back(fmt::format("GPU {} did not finish the layer", g));
      break;
    }
  }
  if (!v.empty()) throw std::logic_error(fmt::format("conservation check failed: {}", fmt::join(v, "; ")));
}

}  // namespace moehub
