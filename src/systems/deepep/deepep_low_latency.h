#pragma once
// DeepEP V1's low-latency dispatch and combine kernels (deepseek-ai/DeepEP 2be0d4f8
// csrc/kernels/internode_ll.cu; docs/systems/deepep.md "Low-latency kernels") as thread-block
// programs. One message per (token, top-k expert) goes straight into the expert's receive slot
// for its source rank: a thread-block copy over NVLink when the peer is in the same NVLink
// domain (NVSHMEM's P2P pointer, DeepEP PR #173), an IBGDA RDMA put otherwise; a per-expert
// count (dispatch) or flag (combine) follows the data and the receivers poll it.
//
// Both kernels: ceil(E / G) CTAs (G = ceil(E / device SMs) warp groups per CTA), one block per
// CTA here. Dispatch CTA s: casts its tokens s, s + S, ... into the send buffer and sends each
// token's message to each of its experts; then, for its G responsible experts, waits until every
// CTA has sent its tokens to that expert and sends the count; after the grid sync it copies, for
// each responsible (local expert, source rank), the received messages into packed_recv_x.
// Combine CTA s: sends back the rows of its G responsible (rank, local expert) pairs and a flag
// per pair; waits for the flags of its responsible experts; after the grid sync reduces its
// tokens' top-k rows into the output.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/param_table.h"
#include "gpu/kernel.h"
#include "platform/cluster.h"
#include "sim/per_gpu.h"

namespace moehub {

// systems.deepep.ll_* (configs/defaults.toml cites each).
struct DeepEpLowLatencyParams {
  int64_t max_dispatch_tokens = 0;  // num_max_dispatch_tokens_per_rank
  bool dispatch_fp8 = true;
  static ParamTable<DeepEpLowLatencyParams> table();
  static DeepEpLowLatencyParams from(const Config& c);
};

// Who sends what: expert e lives on rank e / L (DeepEP's contiguous layout, L = E / n).
struct DeepEpLlPlan {
  int n = 0, experts = 0, local = 0, top_k = 0;
  struct Msg {
    int32_t expert = 0;  // global expert
    int32_t index = 0;   // among the source's tokens to that expert, in token order
  };
  PerGpu<std::vector<Msg>> msgs;              // [g][t * top_k + j]: local token t's slot j
  PerGpu<std::vector<int32_t>> sent;          // [g][e]: tokens g sends to expert e
  PerGpu<std::vector<int64_t>> recv_first;    // [d][le * n + s]: packed row of s's first token to d's expert le
  PerGpu<std::vector<uint64_t>> per_expert;   // [d][le]: rows of each local expert
  int rank_of(int expert) const { return expert / local; }
  int local_of(int expert) const { return expert % local; }
  int64_t tokens(int g) const { return static_cast<int64_t>(msgs[g].size()) / top_k; }
  int64_t selections(int g) const { return static_cast<int64_t>(msgs[g].size()); }
};

// Refuses (UserError) what DeepEP's low-latency mode refuses: an expert count that is not a
// multiple of the ranks or a placement other than the contiguous one, more tokens on a rank
// than num_max_dispatch_tokens_per_rank, EP+TP.
DeepEpLlPlan make_deepep_ll_plan(const Workload& w, int64_t max_dispatch_tokens);

struct LlKernelConfig {
  uint32_t device_sms = 132;
  uint64_t row_bytes = 0;        // a BF16 row of x or of the expert output
  uint64_t msg_bytes = 0;        // dispatch message: 16-byte header, payload, FP8 scales
  uint64_t recv_row_bytes = 0;   // written into packed_recv_x per token: payload, scales, source index
  uint64_t topk_idx_bytes = 8;   // one top-k index (topk_idx_t, int64)
};

// The launch geometry of internode_ll.cu's host wrappers.
struct LlGrid {
  uint32_t groups = 0, warps_per_group = 0;  // num_warp_groups, num_warps_per_group
  uint32_t dispatch_sms = 0, combine_sms = 0;
  uint32_t threads() const { return groups * warps_per_group * 32; }
};

class DeepEpLowLatency {
 public:
  struct Hooks {
    // GPU g copied the messages of source `src` for its local expert `le` into packed_recv_x.
    std::function<void(int g, int le, int src)> dispatch_recv;
    // GPU g reduced local token t's top-k rows into its output.
    std::function<void(int g, int64_t t)> combine_token;
  };
  // Checks the geometry (DeepEP's host asserts) before anything runs; creates the signals.
  DeepEpLowLatency(Cluster& cluster, const DeepEpLlPlan& plan, LlKernelConfig config, Hooks hooks);

  // num_device_sms = the GPU's SMs; `tokens` the rank's tokens (combine's receiver grid).
  static LlGrid grid(int64_t experts, int64_t tokens, uint32_t device_sms);

  // One layer each: the signals below count up from zero and are never cleared, where DeepEP
  // clears its counters for the next launch (internode_ll.cu:343-350, next_clean :287-290 and
  // its double buffers, deep_ep.cpp:1453-1454). moehub simulates one layer per
  // run (Cluster::layer_done), so a second dispatch or combine on a GPU is a logic_error.
  gpu::KernelSpec dispatch(int g);
  gpu::KernelSpec combine(int g);

  struct Block;  // one CTA's program state

 private:
  enum class Path : uint8_t { Self, NvLink, Rdma };
  Path path(int src, int dst) const;
  gpu::KernelSpec kernel(int g, const char* name, uint32_t blocks, bool dispatch);
  gpu::Step dispatch_step(int g, uint32_t s, Block& x);
  gpu::Step dispatch_recv(int g, uint32_t s, Block& x);
  gpu::Step combine_step(int g, uint32_t s, Block& x);
  gpu::Step combine_recv(int g, uint32_t s, Block& x);
  // A write of `bytes` from src into dst's `signal` (grows by `bytes` when they have landed):
  // a local flag add, a thread-block store over NVLink, or an RDMA put (or atomic) through the
  // NIC. The step the issuing CTA takes.
  gpu::Step write(int src, int dst, uint64_t bytes, gpu::SignalId signal);
  void once(int g, uint8_t bit, const char* what);

  Cluster& cluster_;
  const DeepEpLlPlan& plan_;
  LlKernelConfig cfg_;
  Hooks hooks_;
  LlGrid grid_;                  // with the largest token count (dispatch_sms does not depend on it)
  PerGpu<LlGrid> grids_;
  struct Signals {
    std::vector<gpu::SignalId> recv;    // dispatch: [le * n + src], bytes landed and the count
    std::vector<gpu::SignalId> finish;  // dispatch: [e], this rank's messages to e issued
    std::vector<gpu::SignalId> flag;    // combine: [e], expert e's rows back and its flag
    gpu::SignalId dispatch_grid = 0, combine_grid = 0;
  };
  PerGpu<Signals> sig_;
  PerGpu<uint8_t> issued_;  // bit 0: dispatch built, bit 1: combine built
};

}  // namespace moehub
