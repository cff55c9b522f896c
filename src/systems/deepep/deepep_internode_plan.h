#pragma once
// Who sends what in DeepEP V1's internode normal kernels (deepseek-ai/DeepEP 2be0d4f8
// csrc/kernels/internode.cu; docs/systems/deepep.md "Internode"): GPU g is (node g / L, local
// rank g % L) for L GPUs per node. A token of source s goes once over RDMA to the GPU of s's
// local rank on every node holding one of its experts (the relay, s's own GPU for s's node),
// and the relay forwards it over NVLink to each GPU of its node holding one; combine returns
// the same way, reduced per node at the relay. Built from the intranode plan (DeepEpPlan), so
// recv_x's layout and the combine's contributions are the same.

#include <cstdint>
#include <vector>

#include "systems/deepep/deepep_plan.h"

namespace moehub {

struct DeepEpInternodePlan {
  int n = 0, per_node = 0, nodes = 0, channels = 0;
  int node(int g) const { return g / per_node; }
  int local(int g) const { return g % per_node; }
  int gpu(int node, int local) const { return node * per_node + local; }

  // The RDMA stream from s to node r in channel c: s's tokens of the channel with an expert
  // on node r, in order. For token i of the stream and local rank l, `index` is its position in
  // plan.send(s, gpu(r, l))[c] (-1: not sent to that GPU).
  struct Stream {
    std::vector<int64_t> token;
    std::vector<int32_t> index;  // [i * per_node + l]
    int64_t size() const { return static_cast<int64_t>(token.size()); }
    int32_t at(int64_t i, int l, int per_node) const { return index[static_cast<size_t>(i * per_node + l)]; }
  };
  std::vector<Stream> rdma;  // [(s * nodes + r) * channels + c]
  const Stream& stream(int s, int r, int c) const {
    return rdma[static_cast<size_t>((s * nodes + r) * channels + c)];
  }

  // Dispatch forwarding on relay q in channel c: the RDMA chunks in the order the forwarders
  // take them (chunk k of every source node, round robin), and for each destination local rank
  // the tokens it gets, chunk after chunk.
  struct Chunk {
    int src_node = 0;
    int64_t first = 0, count = 0;  // tokens [first, first + count) of stream(src, node(q), c)
  };
  struct Item {
    int src = 0;        // source GPU
    int32_t index = 0;  // in plan.send(src, destination)[c]
  };
  struct Forward {
    std::vector<Chunk> chunks;
    std::vector<std::vector<Item>> items;          // [destination local rank]
    std::vector<std::vector<int64_t>> chunk_end;   // [local rank][chunk]: items before the next chunk
  };
  std::vector<Forward> forward;  // [q * channels + c]
  const Forward& fwd(int q, int c) const { return forward[static_cast<size_t>(q * channels + c)]; }
  int64_t rdma_tokens(int s) const;  // tokens s sends over RDMA, once per node (DeepEP's count)
};

// `rdma_chunk`: tokens per RDMA put (dispatch's num_max_rdma_chunked_send_tokens), which
// sets the forwarders' chunk order.
DeepEpInternodePlan make_deepep_internode_plan(const DeepEpPlan& plan, int per_node, int64_t rdma_chunk);

}  // namespace moehub
