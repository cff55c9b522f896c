#pragma once
// The simulated machine one system runs a layer on: N GPUs with their hosts and streams, the
// NVLink fabric between them, the ports that carry thread-block stores onto the fabric, the
// receivers that write arriving packets into GPU memory, and the logs the report is built from.
// Every system gets a fresh Cluster built from the same configuration and workload.

#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/run_params.h"
#include "platform/kernel_params.h"
#include "gpu/gpu.h"
#include "gpu/host.h"
#include "moe/workload.h"
#include "net/collectives.h"
#include "net/network.h"
#include "sim/per_gpu.h"
#include "sim/simulator.h"
#include "sim/trace_recorder.h"
#include "platform/activity.h"
#include "platform/functional_data.h"

namespace moehub {

class NetworkStorePort;
class MemoryReceiver;

// Per GPU: when the layer's phases began and ended (for the report's windows and rates).
struct PhaseMarks {
  std::optional<Time> routing_start;
  std::optional<Time> gemm1_end;
  std::optional<Time> dispatch_start;
  std::optional<Time> dispatch_end;
  std::optional<Time> combine_start;
  std::optional<Time> combine_end;
  std::optional<Time> done;
};

class Cluster {
 public:
  // `functional`: null for timing-only runs. `make_net` builds the fabric (the packet or flow
  // model that net.fidelity names, unless a caller brings its own).
  Cluster(Simulator& sim, const Config& config, const Workload& workload, TraceRecorder* trace,
          FunctionalData* functional = nullptr, const NetworkFactory& make_net = make_network);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  Simulator& sim() { return sim_; }
  const Config& config() const { return config_; }
  const Workload& workload() const { return workload_; }
  const ModelShape& model() const { return workload_.model(); }
  const gpu::GpuConfig& gpu_config() const { return gpu_config_; }
  const KernelParams& kernel_params() const { return kernels_; }
  TraceRecorder* trace() { return trace_; }
  FunctionalData* functional() { return functional_; }
  int gpus() const { return gpus_.size(); }

  gpu::Gpu& gpu(int g) { return *gpus_.at(g); }
  const gpu::Gpu& gpu_at(int g) const { return *gpus_.at(g); }
  gpu::Host& host(int g) { return *hosts_.at(g); }
  // The GPU's default compute stream.
  gpu::Stream& stream(int g) { return *streams_.at(g); }
  Network& network() { return *network_; }
  const NcclConfig& nccl() const { return nccl_; }
  // The GPUs' NCCL proxy threads, shared by every NCCL collective of the run.
  NcclProxies& nccl_proxies() { return *nccl_proxies_; }

  // Launches `spec` on `stream` through GPU g's host; its run is logged as `what`.
  gpu::KernelId launch(int g, gpu::Stream& stream, Activity what, gpu::KernelSpec spec);
  // Another grid of a fused kernel already launched (gpu::Host::launch_grid): not counted.
  gpu::KernelId launch_grid(int g, gpu::Stream& stream, Activity what, gpu::KernelSpec spec);
  // An eager framework op that launches one kernel: its host cost (host.framework_op_cost),
  // then the launch.
  gpu::KernelId op(int g, gpu::Stream& stream, Activity what, gpu::KernelSpec spec) {
    host(g).framework_op();
    return launch(g, stream, what, std::move(spec));
  }
  // cudaMemcpy(D2H, bytes) + cudaStreamSynchronize + `host_work`, logged as Synchronisation
  // from the moment the host reaches it until it resumes; then `then`.
  void host_sync(int g, gpu::Stream& stream, uint64_t bytes, Time host_work, Callback then);
  // Logs an interval directly (collectives, waits that are not kernels).
  void log(int g, Activity what, Time start, Time end) { activity_.at(g).add(what, start, end); }
  ActivityLog& activity(int g) { return activity_.at(g); }
  PhaseMarks& phases(int g) { return phases_.at(g); }
  // GPU g has finished its part of the layer.
  void layer_done(int g);
  bool all_done() const;

  // A store tag that makes the destination add the bytes it writes to `signal` (a counter in
  // the destination GPU's memory), once they are in memory.
  static uint64_t signal_tag(gpu::SignalId signal) { return static_cast<uint64_t>(signal) + 1; }

  // Replaces GPU g's store port (MoE-Hub routes stores through its Runtime Packet Manager).
  void set_store_port(int g, gpu::StorePort* port) { gpu(g).set_store_port(port); }
  // Replaces GPU g's packet receiver (MoE-Hub puts its AAU and DAM in front of memory).
  void set_receiver(int g, PacketReceiver* receiver);
  // GPU g's receiver (also the network's for that GPU): it takes the GPU's own stores and every
  // message that arrives, at any fidelity.
  PacketReceiver& receiver(int g) { return *receiver_of_.at(g); }
  // Writes `bytes` into GPU dst's memory as if they had arrived, then bumps the tag's signal.
  void deliver_write(int dst, uint64_t bytes, uint64_t tag, Callback then = nullptr);

  // Runs the simulation until no events remain, then finish(). A run still busy after
  // run.time_limit of simulated time is livelocked (a flag no one sets, a credit never
  // returned): it throws, naming `system`, instead of spinning forever. `progress`, if set, is
  // told the simulated time and events so far every kProgressSlice of simulated time (the
  // events run in the same order either way).
  using Progress = std::function<void(Time simulated, uint64_t events)>;
  static constexpr Time kProgressSlice = Time::from_us(10);
  void run_to_completion(const std::string& system, const Progress& progress = {});
  // Folds kernel run times into the activity logs; call once after the simulation ends. With
  // run.check (or in a debug build) it then checks conservation: every packet delivered, every
  // credit returned, every kernel finished, every GPU done; a violation is a std::logic_error
  // naming it (a bug in moehub, exit 1).
  void finish();
  void check_conservation() const;
  // Whether runs check conservation (run.check, or always in a debug build).
  bool checking() const;

 private:
  struct Launched {
    int gpu;
    gpu::KernelId id;
    Activity what;
  };

  Simulator& sim_;
  const Config& config_;
  const Workload& workload_;
  TraceRecorder* trace_;
  FunctionalData* functional_;
  gpu::GpuConfig gpu_config_;
  gpu::HostConfig host_config_;
  RunParams run_;
  KernelParams kernels_;
  NcclConfig nccl_;
  PerGpu<std::unique_ptr<gpu::Gpu>> gpus_;
  PerGpu<std::unique_ptr<gpu::Host>> hosts_;
  PerGpu<gpu::Stream*> streams_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<NcclProxies> nccl_proxies_;
  PerGpu<std::unique_ptr<NetworkStorePort>> ports_;
  PerGpu<std::unique_ptr<MemoryReceiver>> receivers_;
  PerGpu<PacketReceiver*> receiver_of_;  // the current receiver of each GPU
  PerGpu<ActivityLog> activity_;
  PerGpu<PhaseMarks> phases_;
  std::vector<Launched> launched_;
  bool finished_ = false;
};

}  // namespace moehub
