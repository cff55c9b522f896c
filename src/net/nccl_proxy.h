#pragma once
// NCCL's proxy progress threads (NVIDIA/nccl 5067397c src/proxy.cc:954-1014): one host thread per
// GPU ("NCCL Progress%2d", per cudaDev) walks every active proxy operation of that GPU in turn
// (progressOps, proxy.cc:801-830) and does one action per connection per pass: post a receive
// (ncclIbIrecv: ibv_post_recv and the clear-to-send RDMA write), post a send (ncclIbIsend:
// ibv_post_send), or poll a completion (ncclIbTest: ibv_poll_cq). Modelled as a serialised host
// resource per GPU: an action starts when the thread is free and takes its host cost; actions
// run in the order they became possible. A pass that finds nothing costs nothing here (a stated
// simplification: the thread notices a change as soon as it is free).

#include <cstdint>
#include <vector>

#include "sim/callback.h"
#include "sim/simulator.h"
#include "sim/time.h"

namespace moehub {

class NcclProxies {
 public:
  NcclProxies(Simulator& sim, int gpus);
  NcclProxies(const NcclProxies&) = delete;
  NcclProxies& operator=(const NcclProxies&) = delete;

  // Runs an action of `cost` host time on GPU `gpu`'s proxy thread after every action queued
  // there before it; `done` runs `after` its end (what the action started takes that long to
  // be seen; the thread is free again at the end).
  void run(int gpu, Time cost, Time after, Callback done);
  // Actions run so far and their summed host time on GPU `gpu`'s thread (for tests and stats).
  uint64_t actions(int gpu) const { return actions_.at(static_cast<size_t>(gpu)); }
  Time busy(int gpu) const { return busy_.at(static_cast<size_t>(gpu)); }

 private:
  Simulator& sim_;
  std::vector<Time> free_at_;  // when each thread finishes the last action queued on it
  std::vector<uint64_t> actions_;
  std::vector<Time> busy_;
};

}  // namespace moehub
