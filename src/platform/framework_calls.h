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

// `x.masked_select(mask)` of a 2-D CUDA tensor under a 2-D bool mask of `elements` entries
// that selects `selected` elements of `element_bytes` (PyTorch 2.x: masked_select is index
// with the mask, which first takes `mask.nonzero()`). One framework op; nonzero's count (CUB
// DeviceReduce::Sum: one kernel up to one tile of kCubReduceTileItems, else a grid pass and a
// single-tile pass), its 4-byte D2H copy and stream synchronisation (memcpy_and_sync: the
// host blocks), CUB DeviceSelect::Flagged (an init and a sweep kernel), write_indices (the
// flat indices to 2-D ones), then the index kernel that gathers the elements.
void masked_select_op(Cluster& c, const SharedKernels& k, int g, gpu::Stream& s, Activity what, const std::string& name,
                      uint64_t elements, uint64_t selected, uint64_t element_bytes);
// Items of one CUB reduce tile (its single-tile policy: 256 threads x 16 items of a 4-byte
// accumulator); above it DeviceReduce runs two kernels.
inline constexpr uint64_t kCubReduceTileItems = 256 * 16;

}  // namespace moehub
