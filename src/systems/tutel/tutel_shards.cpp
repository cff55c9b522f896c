#include "systems/tutel/tutel_shards.h"

#include <fmt/format.h>
#include <stdexcept>

#include "gpu/gpu.h"

namespace moehub {

PerPair<uint64_t> tutel_a2a_bytes(const std::vector<int64_t>& local_experts, int64_t chunk, uint64_t row_bytes) {
  const int n = static_cast<int>(local_experts.size());
  PerPair<uint64_t> bytes(n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      bytes(s, d) = static_cast<uint64_t>(local_experts[static_cast<size_t>(d)]) * static_cast<uint64_t>(chunk) * row_bytes;
    }
  }
  return bytes;
}

// The fc2-bias group is `create_groups_from_world(group_count=E).model_group`
// (communicate.py:69-87): the r consecutive ranks of one expert, in rank order. Every rank
// gives the same slice, so c10d's allgather takes its same-size branch: one ncclAllGather
// (slices of 2 FIFO steps, platform/nccl_ring.h) into a flat buffer.
TutelShards::TutelShards(Cluster& c, int64_t r, int degree, NcclKernelShape nccl)
    : c_(c), r_(r), streams_(c.gpus(), nullptr) {
  const int n = c.gpus();
  if (r < 2 || n % r != 0) throw std::logic_error("tutel shards: r must be > 1 and divide the GPUs");
  const ModelShape& m = c.model();
  bias_block_ = static_cast<uint64_t>((m.hidden + r - 1) / r) * static_cast<uint64_t>(m.dtype_bytes);  // ffn.py:31
  RingSpec spec;
  spec.block = PerGpu<uint64_t>(n, bias_block_);
  for (int first = 0; first < n; first += static_cast<int>(r)) {
    std::vector<int> group;
    for (int g = first; g < first + r; ++g) group.push_back(g);
    spec.rings.push_back(group);
    spec.slice_steps.push_back(2);
  }
  for (int i = 0; i < degree; ++i) {
    bias_gather_.push_back(std::make_unique<NcclRing>(c, fmt::format("tutel_fc2_bias_allgather_{}", i), spec, nccl));
  }
}

gpu::Stream& TutelShards::shard_group_stream(int g) {
  if (!streams_[g]) streams_[g] = &c_.gpu(g).create_stream("process_group_nccl_shard");
  return *streams_[g];
}

void TutelShards::repeat(int g, const SharedKernels& k, uint64_t buffer_bytes, TutelFunctional& fn) {
  gpu::KernelSpec copy = k.memory(g, "tutel_repeat", buffer_bytes + static_cast<uint64_t>(r_) * buffer_bytes);
  copy.on_done = [&fn, g] { fn.repeat(g); };
  c_.op(g, c_.stream(g), Activity::DataShuffle, std::move(copy));
  c_.host(g).framework_op();  // .view(world_size, -1, H)
}

// net.zero_gather (communicate.py:499-507) -> PrimAllgather.apply -> simple_all_gather
// (:179-187): contiguous (already), torch.empty, torch.chunk, view(1, -1), dist.all_gather
// (c10d: an event from the compute stream, the NCCL call on the group's stream, then per rank
// `outputTensors_[j].copy_(outputFlattened[j])` on that stream, an end event; `work.wait()`
// in Python makes the compute stream wait), output.view; zero_gather's view(-1), [:numel],
// view(full_shape); ffn.py:89 view(1, 1, -1); ffn.py:90-91 torch.mul by 1 / r; ffn.py:93-94 the
// slice back to H columns when r does not divide H.
void TutelShards::fc2_bias(int g, const SharedKernels& k, int i, TutelFunctional& fn) {
  gpu::Host& host = c_.host(g);
  gpu::Stream& s = c_.stream(g);
  gpu::Stream& ns = shard_group_stream(g);
  const gpu::EventId ready = c_.gpu(g).create_event("tutel_bias_ready");
  const gpu::EventId end = c_.gpu(g).create_event("tutel_bias_end");
  for (int v = 0; v < 5; ++v) host.framework_op();  // PrimAllgather.apply, contiguous, empty, chunk, view
  host.framework_op();                               // dist.all_gather
  host.record(s, ready);
  host.wait(ns, ready);
  host.nccl_call();
  bias_gather_[static_cast<size_t>(i)]->launch(g, ns);
  for (int64_t j = 0; j < r_; ++j) {
    gpu::KernelSpec copy = k.memory(g, "tutel_fc2_bias_gather_copy", 2 * bias_block_);
    if (j == r_ - 1) copy.on_done = [&fn, g, i] { fn.bias_gathered(g, i); };
    c_.launch(g, ns, Activity::DataShuffle, std::move(copy));
  }
  host.record(ns, end);
  host.framework_op();  // work.wait()
  host.wait(s, end);
  for (int v = 0; v < 5; ++v) host.framework_op();  // output.view, view(-1), [:numel], view(full_shape), view(1, 1, -1)
  const uint64_t full = bias_block_ * static_cast<uint64_t>(r_);
  gpu::KernelSpec mul = k.memory(g, "tutel_fc2_bias_mul", 2 * full);
  mul.on_done = [&fn, g, i] { fn.bias_scaled(g, i); };
  c_.op(g, s, Activity::ExpertCompute, std::move(mul));
  if (full != static_cast<uint64_t>(c_.model().hidden * c_.model().dtype_bytes)) host.framework_op();  // ffn.py:93-94 [:, :, :H]
}

void TutelShards::sum(int g, const SharedKernels& k, uint64_t buffer_bytes, TutelFunctional& fn) {
  c_.host(g).framework_op();  // y.view(E, r, -1, H)
  gpu::KernelSpec add = k.memory(g, "tutel_shard_sum", static_cast<uint64_t>(r_) * buffer_bytes + buffer_bytes);
  add.on_done = [&fn, g] { fn.sum_shards(g); };
  c_.op(g, c_.stream(g), Activity::Scaling, std::move(add));
}

}  // namespace moehub
