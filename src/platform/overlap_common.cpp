#include "platform/overlap_common.h"

#include <algorithm>
#include <fmt/format.h>

#include "config/run_params.h"
#include "gpu/block_program.h"
#include "gpu/gpu_config.h"
#include "net/send_windows.h"
#include "platform/resource_estimate.h"

namespace moehub {

StreamCollective::StreamCollective(Cluster& cluster, std::string name, PerPair<uint64_t> bytes)
    : cluster_(cluster), name_(std::move(name)), bytes_(std::move(bytes)) {
  for (int g = 0; g < cluster.gpus(); ++g) done_.push_back(cluster.gpu(g).create_signal(name_ + " done"));
}

PerPair<uint64_t> StreamCollective::to_every_peer(int gpus, uint64_t bytes) {
  PerPair<uint64_t> b(gpus, bytes);
  for (int g = 0; g < gpus; ++g) b(g, g) = 0;
  return b;
}

gpu::KernelSpec StreamCollective::kernel(int g, gpu::BlockShape shape,
                                         std::optional<std::pair<gpu::SignalId, int64_t>> before) {
  gpu::KernelSpec spec;
  spec.name = name_;
  spec.blocks = 1;
  spec.shape = shape;
  const gpu::SignalId done = done_.at(g);
  // Steps: [resident] -> [poll `before`] -> arrive + poll done -> finish.
  spec.program = std::make_shared<gpu::FunctionProgram>([this, done, before](gpu::BlockState& b) -> gpu::Step {
    uint32_t s = b.step;
    if (s == 0) return gpu::Step::compute(Time::zero());  // the first step is fetched before dispatch
    if (before && s == 1) return gpu::Step::wait(before->first, before->second, gpu::WaitMode::Poll);
    if (before) --s;
    if (s == 1) {
      arrive();
      return gpu::Step::wait(done, 1, gpu::WaitMode::Poll);
    }
    return gpu::Step::done();
  });
  return spec;
}

void StreamCollective::arrive() {
  if (++arrived_ < cluster_.gpus()) return;
  // On the run's proxy threads, which every NCCL call of the GPU shares (one per GPU).
  all_to_all_ = std::make_unique<AllToAll>(cluster_.network(), cluster_.sim(), cluster_.nccl(), &cluster_.nccl_proxies());
  all_to_all_->start(bytes_, 0, [this] {
    for (int g = 0; g < cluster_.gpus(); ++g) cluster_.gpu(g).signal_add(done_[g], 1);
  });
}

void host_to_device_copy(Cluster& cluster, int g, gpu::Stream& stream, std::string label, uint64_t bytes) {
  cluster.host(g).copy(stream, std::move(label), bytes, false);
}

uint64_t overlap_flow_messages_bound(const Config& c, int collectives, long double pair_bytes, long double layer_messages) {
  const int64_t gpus = RunParams::from(c).gpus;
  const NetConfig net = NetConfig::from(c, static_cast<int>(gpus));
  const long double windows = static_cast<long double>(SendWindows::most_outstanding(net));
  const long double most = std::min(windows, std::max(layer_messages, 0.0L));
  const long double pairs = static_cast<long double>(gpus) * static_cast<long double>(gpus - 1);
  return static_cast<uint64_t>(most) +
         nccl_messages_bound(NcclConfig::from(c), pairs * std::max(collectives, 0), pairs * pair_bytes);
}

uint64_t overlap_state_bytes(const Config& c, int collectives) {
  const auto gpus = static_cast<uint64_t>(std::max<int64_t>(RunParams::from(c).gpus, 1));
  return static_cast<uint64_t>(std::max(collectives, 0)) * (gpus * (gpus - 1) * kNcclPairBytes + gpus * gpus * sizeof(uint64_t));
}

}  // namespace moehub
