#include "net/nccl_proxy.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moehub {

NcclProxies::NcclProxies(Simulator& sim, int gpus)
    : sim_(sim),
      free_at_(static_cast<size_t>(std::max(gpus, 0)), Time::zero()),
      actions_(free_at_.size(), 0),
      busy_(free_at_.size(), Time::zero()) {}

void NcclProxies::run(int gpu, Time cost, Time after, Callback done) {
  if (gpu < 0 || static_cast<size_t>(gpu) >= free_at_.size()) throw std::logic_error("NcclProxies: GPU out of range");
  if (cost < Time::zero() || after < Time::zero()) throw std::logic_error("NcclProxies: negative cost");
  const auto g = static_cast<size_t>(gpu);
  const Time end = std::max(sim_.now(), free_at_[g]) + cost;
  free_at_[g] = end;
  ++actions_[g];
  busy_[g] = busy_[g] + cost;
  sim_.schedule_at(end + after, std::move(done));
}

}  // namespace moehub
