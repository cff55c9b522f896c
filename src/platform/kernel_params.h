#pragma once
// The `kernels.*` section: choices about the kernels several systems share.

#include <cstdint>

#include "config/config.h"
#include "config/param_registry.h"

namespace moehub {

struct KernelParams {
  uint32_t memory_block_threads = 0;      // threads per block of memory-bound kernels
  bool megatron_router_aux_loss = false;  // Megatron's router also runs its aux-loss ops

  static KernelParams from(const Config& config);
  static void declare(ParamRegistry& registry);
};

}  // namespace moehub
