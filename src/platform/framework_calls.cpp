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

}  // namespace moehub
