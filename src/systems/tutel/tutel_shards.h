#pragma once
// Tutel's parallel_type 'model' path (docs/research/tutel-model-parallel.md; microsoft/tutel
// v0.3.0 = 71db950): with E experts on N > E GPUs each expert is sharded over its
// r = sharded_count = N / E consecutive GPUs (the shard-expert workload of docs/workload.md with
// one shard per GPU). What the path adds to tutel's program, per GPU:
//  - moe_layer.py:293-294 `y.repeat(1, r, 1).view(world_size, -1, H)`: a copy kernel writing r
//    x the [E, capacity, H] dispatch buffer, read as [N, capacity, H] (row block d for GPU d);
//  - in each FusedExpertsNetwork.forward (ffn.py:87-91): the fc2 bias (H / r elements per GPU)
//    all-gathered over the expert's shard group (`net.zero_gather`, an NCCL all-gather through
//    c10d) and `torch.mul` by 1 / r, so that the sum below adds it once;
//  - moe_layer.py:307-309 `torch.sum(y.view(E, r, -1, H), dim=1)` after the combine: the TP
//    reduction, a memory kernel reading r x the [E, capacity, H] buffer and writing it once.
// The GEMMs at F / r columns are the workload's (its physical model), the dispatch matrix the
// tutel program's equal splits over one shard expert per GPU (tutel_a2a_bytes).

#include <cstdint>
#include <memory>
#include <vector>

#include "platform/cluster.h"
#include "platform/nccl_group_call.h"
#include "platform/nccl_ring.h"
#include "platform/shared_kernels.h"
#include "systems/tutel/tutel_functional.h"

namespace moehub {

// Bytes of each (source, destination) block of tutel's equal-split all-to-all: every GPU sends
// each GPU d `local_experts[d]` experts' `chunk` slots of `row_bytes` (padding included). Under
// 'model' local_experts is 1 shard expert per GPU: each source sends N blocks of one expert's
// slots, r x the E blocks of pure EP.
PerPair<uint64_t> tutel_a2a_bytes(const std::vector<int64_t>& local_experts, int64_t chunk, uint64_t row_bytes);

class TutelShards {
 public:
  // `r` = sharded_count (the workload's TP degree); one bias all-gather per pipelining chunk
  // (`degree` of them: FusedExpertsNetwork.forward runs once per chunk).
  TutelShards(Cluster& cluster, int64_t r, int degree, NcclKernelShape nccl);

  int64_t r() const { return r_; }
  // y.repeat and its view; `buffer_bytes` is the [E, capacity, H] buffer's.
  void repeat(int g, const SharedKernels& k, uint64_t buffer_bytes, TutelFunctional& fn);
  // ffn.py:87-91 for chunk i, before the GEMMs on the compute stream.
  void fc2_bias(int g, const SharedKernels& k, int i, TutelFunctional& fn);
  // The view and torch.sum over r after the combine.
  void sum(int g, const SharedKernels& k, uint64_t buffer_bytes, TutelFunctional& fn);

 private:
  gpu::Stream& shard_group_stream(int g);

  Cluster& c_;
  int64_t r_;
  uint64_t bias_block_;  // bytes of one GPU's fc2-bias slice: ceil(H / r) elements
  std::vector<std::unique_ptr<NcclRing>> bias_gather_;  // per chunk
  PerGpu<gpu::Stream*> streams_;  // ProcessGroupNCCL's stream of the shard group's communicator
};

}  // namespace moehub
