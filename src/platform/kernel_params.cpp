#include "platform/kernel_params.h"

#include "config/param_table.h"

namespace moehub {
namespace {

ParamTable<KernelParams> kernel_table() {
  ParamTable<KernelParams> t;
  t.integer("kernels.memory_block_threads", &KernelParams::memory_block_threads,
            "Threads per block of memory-bound kernels (permute, activation, scaling)")
      .at_least(32)
      .at_most(1024);
  t.boolean("kernels.megatron_router_aux_loss", &KernelParams::megatron_router_aux_loss,
            "Megatron's router also runs the training-time auxiliary load-balancing loss ops (13 framework ops, 8 "
            "kernels; docs/research/megatron-router-te-ops.md)");
  return t;
}

}  // namespace

KernelParams KernelParams::from(const Config& c) {
  KernelParams k;
  kernel_table().read(c, k);
  return k;
}

void KernelParams::declare(ParamRegistry& r) { kernel_table().declare(r); }

}  // namespace moehub
