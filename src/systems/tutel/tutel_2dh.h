#pragma once
// Tutel's 2D-hierarchical all-to-all at overlap degree 1 (`use_2dh=True`; microsoft/tutel
// 71db950 tutel/impls/communicate.py:344-363 PrimAllToAll2D, create_groups_from_world :38-131):
// with LOCAL_SIZE = L GPUs per node and N nodes, the world splits into `data_group`s (the N GPUs
// of one local rank, stride L: one per rail) and `model_group`s (the L GPUs of one node). Both
// directions run an all_to_all_single over the data group (between nodes, same local rank),
// then one over the model group (inside the node), then a swapaxes copy that puts the rows back
// in global rank order. A row from source s to the GPU d holding its expert therefore travels
// s -> relay -> d with relay = (node of d, local rank of s); so does a combined row from the
// expert's GPU s back to its source d. One node (N = 1): the data group has one rank and
// PrimAllToAll.transform returns its input, so only the model-group all-to-all runs.

#include <cstdint>
#include <vector>

#include "sim/per_gpu.h"

namespace moehub {

struct Tutel2dhSteps {
  PerPair<uint64_t> dispatch_inter, dispatch_intra, combine_inter, combine_intra;
};

// The bytes each step moves, from each GPU's local expert count and the bytes of one expert's
// capacity slots (capacity x row bytes). Dispatch, between nodes: s sends relay the slots of
// every expert on relay's node; inside the node: relay sends d d's experts' slots from the N
// sources of relay's local rank. Combine, between nodes: s (experts) sends relay its experts'
// slots for the L sources on relay's node; inside: relay sends d the slots of the experts of
// relay's local rank on every node.
Tutel2dhSteps tutel_2dh_steps(const std::vector<int64_t>& local_experts, int per_node, uint64_t slot_bytes);

// The GPU through which a row from `src` reaches `dst` (both directions).
inline int tutel_2dh_relay(int src, int dst, int per_node) { return dst / per_node * per_node + src % per_node; }

// Overlap degree d > 1: per chunk `nccl_all_to_all_2d_async` (custom/custom_kernel.cpp:570-640),
// the other order: a stride copy groups the W slices (slice j: rank j's rows) by local rank,
// one NCCL group inside the node sends local GPU l the N slices of the ranks of local rank l, a
// second stride copy groups them by node, one NCCL group between nodes sends each node's GPU
// of the same local rank its L slices. A row from src reaches dst via (node of src, local rank
// of dst). `chunk_bytes`: one expert's chunk of capacity slots; the `*_inter` steps run second.
Tutel2dhSteps tutel_2dh_extension_steps(const std::vector<int64_t>& local_experts, int per_node, uint64_t chunk_bytes);
inline int tutel_2dh_extension_relay(int src, int dst, int per_node) {
  return src / per_node * per_node + dst % per_node;
}

}  // namespace moehub
