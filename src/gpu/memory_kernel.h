#pragma once
// Memory-bound kernels (permute, activation, scaling, routing softmax/top-k): one full wave of
// thread blocks in a grid-stride loop, each moving an equal share of the kernel's bytes
// through the shared memory system. Their time is their bytes over the share of bandwidth
// they get while other traffic (GEMM operands, arriving network writes, polls) competes.
//
// The byte counts below follow the data each kernel must read and write once; element sizes
// are arguments because they depend on the model's dtype and the framework's index types.

#include <cstdint>
#include <string>

#include "gpu/kernel.h"

namespace moehub::gpu {

class Gpu;

// `shape` is the kernel's thread block; the grid is the SMs of `sms` times the blocks of that
// shape an SM holds.
KernelSpec memory_kernel(const Gpu& gpu, std::string name, uint64_t bytes, BlockShape shape, SmRange sms = {});

namespace memory_bytes {
// Gather (or scatter) `rows` rows of `hidden` elements by an index: read and write each row,
// read one index per row.
uint64_t permute(uint64_t rows, uint64_t hidden, uint32_t element_bytes, uint32_t index_bytes);
// Elementwise activation on `rows` x `ffn` outputs; gated (SwiGLU) reads gate and up halves.
uint64_t activation(uint64_t rows, uint64_t ffn, bool gated, uint32_t element_bytes);
// Each token sums its `top_k` expert rows weighted by its routing weights.
uint64_t scaling(uint64_t tokens, uint64_t top_k, uint64_t hidden, uint32_t element_bytes, uint32_t weight_bytes);
// Softmax over `experts` logits per token, then top-k: writes k weights and k indices.
uint64_t routing(uint64_t tokens, uint64_t experts, uint64_t top_k, uint32_t logit_bytes, uint32_t weight_bytes,
                 uint32_t index_bytes);
}  // namespace memory_bytes

}  // namespace moehub::gpu
