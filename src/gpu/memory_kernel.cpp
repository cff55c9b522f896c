#include "gpu/memory_kernel.h"

#include <memory>

#include "gpu/gpu.h"

namespace moehub::gpu {

KernelSpec memory_kernel(const Gpu& gpu, std::string name, uint64_t bytes, BlockShape shape, SmRange sms) {
  const uint32_t count = sms.count ? sms.count : gpu.config().sm_count - sms.first;
  const uint64_t grid = static_cast<uint64_t>(count) * gpu.blocks_per_sm(shape);
  KernelSpec spec;
  spec.name = std::move(name);
  spec.blocks = static_cast<uint32_t>(grid);
  spec.shape = shape;
  spec.sms = sms;
  if (grid == 0) {
    spec.program = std::make_shared<StepListProgram>(std::vector<Step>{});
    return spec;
  }
  // Equal shares; the first (bytes % grid) blocks carry one byte more.
  spec.program = std::make_shared<FunctionProgram>([bytes, grid](BlockState& b) {
    if (b.step > 0) return Step::done();
    return Step::memory(bytes / grid + (b.block < bytes % grid ? 1 : 0));
  });
  return spec;
}

namespace memory_bytes {

uint64_t permute(uint64_t rows, uint64_t hidden, uint32_t element_bytes, uint32_t index_bytes) {
  return 2 * rows * hidden * element_bytes + rows * index_bytes;
}

uint64_t activation(uint64_t rows, uint64_t ffn, bool gated, uint32_t element_bytes) {
  return (gated ? 3 : 2) * rows * ffn * element_bytes;
}

uint64_t scaling(uint64_t tokens, uint64_t top_k, uint64_t hidden, uint32_t element_bytes, uint32_t weight_bytes) {
  return tokens * top_k * hidden * element_bytes + tokens * top_k * weight_bytes + tokens * hidden * element_bytes;
}

uint64_t routing(uint64_t tokens, uint64_t experts, uint64_t top_k, uint32_t logit_bytes, uint32_t weight_bytes,
                 uint32_t index_bytes) {
  return tokens * experts * logit_bytes + tokens * top_k * (weight_bytes + index_bytes);
}

}  // namespace memory_bytes
}  // namespace moehub::gpu
