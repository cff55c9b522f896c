#pragma once
// The kernels of DeepEP's normal-mode intranode path (deepseek-ai/DeepEP csrc/kernels/
// intranode.cu; docs/research/systems.md 4), as thread-block programs on the simulated GPUs.
//
// DeepEpChannelKernel: `dispatch` or `combine`. num_sms CTAs, one per SM (launch bounds 1):
// even CTAs send, odd CTAs receive, so CTA pair c is channel c, which owns a contiguous token
// range of the sender. Inside a CTA the warps are grouped per peer rank; each (CTA, peer) warp
// group is a block here, N per SM, so one peer's full ring does not stall the others, and
// all of a CTA's groups share its SM's store issue rate.
//  - sender group (channel c, peer d): stores the channel's start/end offsets into d's memory,
//    then for each chunk of `chunk` tokens: waits until d's ring (ring slots per (channel,
//    source)) has room, loads the rows (TMA into shared memory: HBM traffic), and stores each
//    token (row plus metadata) into d's ring.
//  - receiver group (channel c, peer s): waits for the offsets, then per sender chunk polls the
//    tail (the bytes of s's stores that have landed in its ring: the release-ordered tail store
//    becomes visible after the data), copies the chunk out of the ring (`recv_bytes`), and
//    stores the new head into s's memory, where s's sender polls it.
// Simplified: the sender polls a head that the receiver pushes (DeepEP's sender reads the
// receiver-owned head with remote loads), and the receiver consumes whole sender chunks.
//
// deepep_notify_kernel: `notify_dispatch` / `cached_notify_combine`: CTA 0 runs barriers across
// the ranks (a 4-byte store to every peer, then a poll until all peers' stores have landed),
// optional count stores to every peer, local work, and may tell the host; the other CTAs do a
// small amount of memory work each.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "platform/cluster.h"

namespace moehub {

// Tokens each GPU's channel sends to each peer: tokens(src, channel, dst).
struct ChannelCounts {
  int gpus = 0;
  int channels = 0;
  std::vector<int64_t> tokens;
  int64_t& at(int src, int channel, int dst) {
    return tokens.at(static_cast<size_t>((src * channels + channel) * gpus + dst));
  }
  int64_t at(int src, int channel, int dst) const {
    return tokens.at(static_cast<size_t>((src * channels + channel) * gpus + dst));
  }
};

struct ChannelKernelConfig {
  std::string name;
  uint32_t num_sms = 20;        // even: sender and receiver CTA per channel
  uint32_t threads = 768;       // per CTA, split evenly over the peer groups
  uint32_t chunk_tokens = 6;    // tokens per sender step
  uint32_t ring_tokens = 256;   // ring slots per (channel, source) in receiver memory
  uint64_t token_bytes = 0;     // stored per token (row and metadata)
  uint64_t row_bytes = 0;       // loaded from HBM per token by the sender
};

class DeepEpChannelKernel {
 public:
  struct Hooks {
    // HBM bytes the receiver group of `gpu` moves for tokens [first, first + count) of
    // (channel, src).
    std::function<uint64_t(int gpu, int channel, int src, int64_t first, int64_t count)> recv_bytes;
    // Called when that copy is done (functional mode moves the rows then).
    std::function<void(int gpu, int channel, int src, int64_t first, int64_t count)> on_chunk;
  };

  // Creates the kernel's signals on every GPU.
  DeepEpChannelKernel(Cluster& cluster, ChannelKernelConfig config, ChannelCounts counts, Hooks hooks);

  // GPU g's kernel (launch it once).
  gpu::KernelSpec kernel(int g);
  int channels() const { return counts_.channels; }

 private:
  struct Signals {
    std::vector<gpu::SignalId> meta;  // [channel][src], receiver side
    std::vector<gpu::SignalId> tail;  // [channel][src], receiver side
    std::vector<gpu::SignalId> head;  // [channel][dst], sender side
  };
  gpu::SignalId meta(int g, int c, int s) const { return sig_[g].meta[static_cast<size_t>(c * n_ + s)]; }
  gpu::SignalId tail(int g, int c, int s) const { return sig_[g].tail[static_cast<size_t>(c * n_ + s)]; }
  gpu::SignalId head(int g, int c, int d) const { return sig_[g].head[static_cast<size_t>(c * n_ + d)]; }

  ChannelKernelConfig cfg_;
  ChannelCounts counts_;
  Hooks hooks_;
  int n_;
  PerGpu<Signals> sig_;
};

struct NotifyConfig {
  std::string name;
  uint32_t threads = 128;
  int barriers_before_counts = 1;              // barriers before the count stores
  // The GPUs a barrier stores into and waits on (empty: every other GPU).
  std::vector<int> barrier_peers;
  PerGpu<uint64_t> count_bytes_to_peer;       // per peer, 0: none (empty: no count stores)
  int barriers_after_counts = 1;               // barriers after them, before the host is told
  uint64_t local_bytes = 0;                    // CTA 0's local work (prefix sums) before telling the host
  uint64_t clean_bytes = 0;                    // CTA 0's queue cleaning after telling the host
  int final_barriers = 1;
  uint32_t extra_blocks = 0;                   // CTAs 1.. and their memory work each
  uint64_t extra_block_bytes = 0;
};

// GPU g's notify kernel; `tell_host` (may be null) runs when CTA 0 writes the host-mapped
// counters. `barrier_signal[g]` must be a fresh signal of GPU g, shared by all GPUs' kernels.
gpu::KernelSpec deepep_notify_kernel(Cluster& cluster, int g, const NotifyConfig& config,
                                     const PerGpu<gpu::SignalId>& barrier_signal, std::function<void()> tell_host);

}  // namespace moehub
