#pragma once
// Helpers that issue a framework's op sequence as its Python code calls it: each step is an
// eager framework op (host.framework_op_cost) followed by the kernels it launches, each sized
// by the bytes it reads and writes (none: a host-only op such as a view or a CPU tensor).
// Shared by the systems whose router, gate or count path is written as such a table.

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/stream.h"
#include "platform/activity.h"
#include "platform/cluster.h"
#include "platform/shared_kernels.h"

namespace moehub {

// One Python-level call: its name and the bytes of each kernel it launches.
struct FrameworkOp {
  const char* name;
  std::vector<uint64_t> kernels;
};

// Issues `ops` in order on GPU g's host; kernel i of op "x" is named `prefix` + "x".
void issue_framework_ops(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, Activity what, const std::string& prefix,
                         const std::vector<FrameworkOp>& ops);

// A framework op that blocks the host on a copy: `.item()` / `.cpu()` (device to host) or
// `.cuda()` of a CPU tensor (host to device; PyTorch's non-blocking=False copy is
// cudaMemcpyAsync + cudaStreamSynchronize). Logged as Synchronisation.
void blocking_copy_op(Cluster& c, int g, gpu::Stream& s, uint64_t bytes, bool to_device);

}  // namespace moehub
