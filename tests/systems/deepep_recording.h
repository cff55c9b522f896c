#pragma once
// Shared by the DeepEP unit and model-level tests.

#include <memory>
#include <string>
#include <vector>

#include "gpu/store_port.h"
#include "platform/network_store_port.h"
#include "systems/system_run.h"

namespace moehub::test {

// Records every store of a GPU, then hands it to the ordinary port.
class RecordingPort final : public gpu::StorePort {
 public:
  RecordingPort(Cluster& c, int g) : cluster_(c), gpu_(g), inner_(c, g) {}
  bool try_store(const gpu::StoreRequest& s, Callback retry) override {
    const bool ok = inner_.try_store(s, std::move(retry));
    if (ok) stores.push_back({cluster_.gpu(gpu_).kernel_times(s.kernel).name, s.sm, s.bytes, s.dst_gpu});
    return ok;
  }
  struct Seen {
    std::string kernel;
    uint32_t sm;
    uint64_t bytes;
    uint32_t dst;
  };
  std::vector<Seen> stores;

 private:
  Cluster& cluster_;
  int gpu_;
  NetworkStorePort inner_;
};

struct RecordedRun {
  SystemRun run;
  std::vector<std::unique_ptr<RecordingPort>> ports;
  RecordedRun(std::vector<std::string> set, bool data) : run("deepep", std::move(set), data) {
    for (int g = 0; g < run.cluster->gpus(); ++g) {
      ports.push_back(std::make_unique<RecordingPort>(*run.cluster, g));
      run.cluster->set_store_port(g, ports.back().get());
    }
    run.run();
  }
};
}  // namespace moehub::test
