#pragma once
// The flow fidelity: every transfer is a fluid flow; rates are max-min fair over the same
// links as the packet model. Because packets spread evenly over the planes, a GPU's S links
// in one direction act as one resource of the GPU's per-direction bandwidth. A flow loads its
// source's egress and its destination's ingress by its wire bytes (payload plus headers, in
// max-size packets) and, with write acks on, the reverse direction by one ack per packet.
// There are no queues: no head-of-line blocking, no buffer limits, no priorities.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "net/network.h"

namespace moehub {

class FlowNetwork final : public Network {
 public:
  FlowNetwork(const NetConfig& config, Simulator& sim, TraceRecorder* trace = nullptr);

  void transfer(int src, int dst, uint64_t bytes, int priority, Callback on_complete) override;
  nlohmann::json stats() const override;
  void flush_trace() override;
  const NetConfig& config() const override { return cfg_; }

  // Current payload rate of every active flow (bytes/s), in start order; for tests.
  std::vector<double> rates() const;

 private:
  struct Flow {
    int src = 0;
    int dst = 0;
    double remaining = 0;  // payload bytes
    double rate = 0;       // payload bytes per second
    double wire_per_byte = 0;
    double ack_per_byte = 0;
    uint32_t last_payload = 0;
    Callback on_complete;
  };
  struct Resource {  // one GPU's links in one direction, all planes together
    double capacity = 0;  // wire bytes per second
    double load = 0;      // wire bytes per second currently used
    double bytes = 0;     // wire bytes carried so far
    int64_t busy_ps = 0;  // time with load > 0
    int64_t busy_since = -1;
  };

  size_t egress(int gpu) const { return static_cast<size_t>(gpu) * 2; }
  size_t ingress(int gpu) const { return static_cast<size_t>(gpu) * 2 + 1; }
  void advance();
  void reallocate();
  void schedule_next();
  void on_event(uint64_t generation);

  NetConfig cfg_;
  Simulator& sim_;
  TraceRecorder* trace_;
  std::vector<Flow> flows_;
  std::vector<Resource> resources_;
  Time last_update_;
  uint64_t generation_ = 0;
  EventHandle pending_;
  uint64_t flows_completed_ = 0;
};

}  // namespace moehub
