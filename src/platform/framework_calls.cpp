#include "platform/framework_calls.h"

#include <memory>

namespace moehub {

void issue_framework_ops(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, Activity what, const std::string& prefix,
                         const std::vector<FrameworkOp>& ops) {
  for (const FrameworkOp& op : ops) {
    c.host(g).framework_op();
    for (const uint64_t bytes : op.kernels) c.launch(g, s, what, k.memory(g, prefix + op.name, bytes));
  }
}

void blocking_copy_op(Cluster& c, int g, gpu::Stream& s, uint64_t bytes, bool to_device) {
  c.host(g).framework_op();
  if (!to_device) {
    c.host_sync(g, s, bytes, Time::zero(), nullptr);
    return;
  }
  auto start = std::make_shared<Time>();
  c.host(g).call([&c, start] { *start = c.sim().now(); });
  c.host(g).h2d_sync(s, bytes, [&c, g, start] { c.log(g, Activity::Synchronisation, *start, c.sim().now()); });
}

// Sources: pytorch/pytorch 0358b9e9 aten/src/ATen/native/cuda/Nonzero.cu nonzero_cuda_out_impl
// (DeviceReduce::Sum, memcpy_and_sync, DeviceSelect::Flagged, write_indices for ndim > 1);
// aten/src/ATen/native/cuda/IndexKernel.cpp masked_select_out_cuda_impl (index_out with the
// mask); CUB dispatch_reduce.cuh DispatchReduce::Invoke (single tile or two passes) and
// dispatch_select_if.cuh (tile-state init, then the select sweep).
void masked_select_op(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, Activity what, const std::string& name,
                      uint64_t elements, uint64_t selected, uint64_t element_bytes) {
  constexpr uint64_t kMask = 1, kInt = 4, kLong = 8;
  c.host(g).framework_op();
  if (elements <= kCubReduceTileItems) {
    c.launch(g, s, what, k.memory(g, name + "_nonzero_count", elements * kMask + kInt));
  } else {
    c.launch(g, s, what, k.memory(g, name + "_nonzero_count", elements * kMask));
    c.launch(g, s, what, k.memory(g, name + "_nonzero_count_tile", 2 * kInt));
  }
  c.host_sync(g, s, kInt, Time::zero(), nullptr);
  c.launch(g, s, what, k.memory(g, name + "_nonzero_select_init", 2 * kInt));
  c.launch(g, s, what, k.memory(g, name + "_nonzero_select", elements * kMask + selected * kLong));
  c.launch(g, s, what, k.memory(g, name + "_nonzero_write_indices", 3 * selected * kLong));
  c.launch(g, s, what, k.memory(g, name + "_index", selected * (2 * kLong + 2 * element_bytes)));
}

}  // namespace moehub
