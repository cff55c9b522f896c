#include "platform/nccl_ring.h"

#include <algorithm>
#include <stdexcept>

#include "gpu/gpu.h"
#include "net/network.h"

namespace moehub {

NcclRing::NcclRing(Cluster& cluster, std::string name, RingSpec spec, NcclKernelShape shape)
    : cluster_(cluster), name_(std::move(name)), spec_(std::move(spec)), shape_(shape) {
  const NcclConfig& nccl = cluster.nccl();
  if (!spec_.slice_steps.empty() && spec_.slice_steps.size() != spec_.rings.size()) {
    throw std::logic_error(name_ + ": one slice_steps per ring");
  }
  // The receiver's head update is a store crossing the fabric back (as net/collectives.h).
  slot_return_ = cluster.network().config().unloaded_packet_latency(0);
  ranks_.resize(cluster.gpus());
  if (spec_.block.size() != cluster.gpus()) throw std::logic_error(name_ + ": one block per GPU");
  for (size_t i = 0; i < spec_.rings.size(); ++i) {
    const std::vector<int>& ring = spec_.rings[i];
    const uint32_t steps = spec_.slice_steps.empty() ? 1 : spec_.slice_steps[i];
    if (ring.size() < 2) throw std::logic_error(name_ + ": a ring needs two ranks");
    if (steps == 0 || steps > static_cast<uint32_t>(nccl.steps)) throw std::logic_error(name_ + ": slice_steps must be 1..nccl.steps");
    for (size_t p = 0; p < ring.size(); ++p) {
      if (spec_.block.at(ring[p]) > 0) add_chain(ring, p, steps);  // NCCL skips a zero-size collective
    }
  }
  for (const auto& c : chains_) stage_done_.emplace_back(c.stages.size(), 0);
  const NetConfig& net = cluster.network().config();
  for (size_t ci = 0; ci < chains_.size(); ++ci) {
    chains_[ci].hops.resize(chains_[ci].stages.size());
    for (size_t si = 0; si + 1 < chains_[ci].stages.size(); ++si) {
      const int a = chains_[ci].stages[si].gpu;
      const int b = chains_[ci].stages[si + 1].gpu;
      if (net.scale_out() && a / net.gpus_per_node != b / net.gpus_per_node) add_hop(ci, si);
    }
  }
  for (int g = 0; g < cluster.gpus(); ++g) {
    if (participates(g)) ranks_[g].done_signal = cluster.gpu(g).create_signal(name_ + " done");
  }
}

// Broadcast: the root, then its ring successors. Reduce: the root's successor first, the root
// last. HBM bytes per slice byte as the header says.
void NcclRing::add_chain(const std::vector<int>& ring, size_t root_pos, uint32_t slice_steps) {
  const size_t t = ring.size();
  Chain c;
  c.root = ring[root_pos];
  c.bytes = spec_.block[c.root];
  c.slice_bytes = cluster_.nccl().chunk_bytes * slice_steps;
  c.slots = cluster_.nccl().steps / static_cast<int>(slice_steps);
  c.slices = static_cast<int>((c.bytes + c.slice_bytes - 1) / c.slice_bytes);
  const size_t first = spec_.op == RingOp::Broadcast ? root_pos : root_pos + 1;
  for (size_t i = 0; i < t; ++i) {
    Stage s;
    s.gpu = ring[(first + i) % t];
    if (spec_.op == RingOp::Reduce) s.pass_factor = i == 0 ? 1 : (i + 1 == t ? 3 : 2);
    c.stages.push_back(s);
  }
  c.stages.front().received = c.slices;
  for (size_t i = 0; i < t; ++i) {
    Rank& r = ranks_.at(c.stages[i].gpu);
    r.stages.emplace_back(chains_.size(), i);
    ++r.pending;
  }
  chains_.push_back(std::move(c));
}

void NcclRing::add_hop(size_t ci, size_t si) {
  Chain& c = chains_[ci];
  auto hop = std::make_unique<NcclNetHop>(cluster_.network(), cluster_.sim(), cluster_.nccl_proxies(), cluster_.nccl(),
                                          c.stages[si].gpu, c.stages[si + 1].gpu, static_cast<uint64_t>(c.slices), c.slots);
  hop->set_hooks(
      [this, ci, si](uint64_t) {  // the tail is stored: the sending stage's part of the slice is done
        ++chains_[ci].stages[si].landed;
        maybe_stage_done(ci, si);
      },
      [this, ci, si](uint64_t) {  // the proxy polled the send: the slot is free
        --chains_[ci].stages[si].slots_used;
        try_pass(ci, si);
      },
      [this, ci, si](uint64_t) {
        ++chains_[ci].stages[si + 1].received;
        try_pass(ci, si + 1);
      });
  c.hops[si] = std::move(hop);
}

uint64_t NcclRing::slice_size(const Chain& c, int i) const {
  const uint64_t off = static_cast<uint64_t>(i) * c.slice_bytes;
  return std::min(c.slice_bytes, c.bytes - off);
}

void NcclRing::launch(int g, gpu::Stream& stream, Callback on_done) {
  if (!participates(g)) return;
  gpu::KernelSpec spec = nccl_kernel(
      name_, shape_,
      [this, g] {
        if (ranks_[g].resident) return;
        ranks_[g].resident = cluster_.sim().now();
        // The receiving proxies post their first receives as the rank's operation goes live.
        for (const auto& [c, s] : ranks_[g].stages) {
          if (s > 0 && chains_[c].hops[s - 1]) chains_[c].hops[s - 1]->open_receiver();
        }
        for (const auto& [c, s] : ranks_[g].stages) try_pass(c, s);
      },
      ranks_[g].done_signal);
  spec.on_done = [this, g, on_done = std::move(on_done)]() mutable {
    ranks_[g].done = cluster_.sim().now();
    if (on_done) on_done();
  };
  cluster_.launch(g, stream, Activity::Communication, std::move(spec));
}

// The stage's next pass, if its rank is up, its CTA free, the slice in its FIFO and (unless it
// is the chain's end) a slot free in the next rank's FIFO.
void NcclRing::try_pass(size_t ci, size_t si) {
  Chain& c = chains_[ci];
  Stage& st = c.stages[si];
  const bool last = si + 1 == c.stages.size();
  if (!ranks_[st.gpu].resident || st.busy || st.passed == c.slices || st.received <= st.passed) return;
  if (!last && st.slots_used >= c.slots) return;
  st.busy = true;
  if (!last) ++st.slots_used;
  const int slice = st.passed;
  cluster_.gpu(st.gpu).memory_read(slice_size(c, slice) * st.pass_factor, [this, ci, si, slice] { passed(ci, si, slice); });
}

void NcclRing::passed(size_t ci, size_t si, int slice) {
  Chain& c = chains_[ci];
  Stage& st = c.stages[si];
  st.busy = false;
  ++st.passed;
  if (si > 0 && c.hops[si - 1]) {
    c.hops[si - 1]->consumed();  // across nodes: the head store lets the proxy post a receive
  } else if (si > 0) {  // the slice has left the previous stage's slot
    cluster_.sim().schedule_in(slot_return_, [this, ci, si] {
      --chains_[ci].stages[si - 1].slots_used;
      try_pass(ci, si - 1);
    });
  }
  if (si + 1 < c.stages.size()) send(ci, si, slice);
  try_pass(ci, si);
  maybe_stage_done(ci, si);
}

void NcclRing::send(size_t ci, size_t si, int slice) {
  Chain& c = chains_[ci];
  if (c.hops[si]) {
    c.hops[si]->push(slice_size(c, slice));
    return;
  }
  cluster_.network().transfer(c.stages[si].gpu, c.stages[si + 1].gpu, slice_size(c, slice), 0, [this, ci, si] {
    Chain& ch = chains_[ci];
    ++ch.stages[si].landed;
    ++ch.stages[si + 1].received;
    try_pass(ci, si + 1);
    maybe_stage_done(ci, si);
  });
}

void NcclRing::maybe_stage_done(size_t ci, size_t si) {
  const Chain& c = chains_[ci];
  const Stage& st = c.stages[si];
  const bool last = si + 1 == c.stages.size();
  if (stage_done_[ci][si] || st.passed < c.slices || (!last && st.landed < c.slices)) return;
  stage_done_[ci][si] = 1;
  if (on_complete_) on_complete_(c.root, st.gpu);
  Rank& r = ranks_[st.gpu];
  if (--r.pending == 0) cluster_.gpu(st.gpu).signal_set(r.done_signal, 1);
}

}  // namespace moehub
