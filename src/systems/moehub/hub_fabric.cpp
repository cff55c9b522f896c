#include "systems/moehub/hub_fabric.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <span>
#include <stdexcept>

#include "net/network.h"
#include "sim/error.h"
#include "platform/cluster.h"
#include "platform/store_staging.h"

namespace moehub {

namespace {
constexpr uint64_t kRowspBit = 1ULL << 63;
constexpr uint64_t kNopBit = 1ULL << 62;
constexpr uint64_t kAddressMask = (1ULL << 49) - 1;
constexpr int kGpuShift = 40;                        // peer address = GPU << 40 | local address
constexpr uint64_t kLocalMask = (1ULL << kGpuShift) - 1;

// Validity bits of `bytes` at `offset_in_line`, one per granule.
uint64_t mask_of(uint64_t offset_in_line, uint64_t bytes, uint32_t granule) {
  const uint64_t first = offset_in_line / granule;
  const uint64_t count = bytes / granule;
  const uint64_t ones = count >= 64 ? ~0ULL : (1ULL << count) - 1;
  return ones << first;
}

// The GPU a hub packet is for: its MallocID's, or the GPU bits of its peer address.
int destination_of(const HubPacket& h) {
  return h.rowsp ? static_cast<int>(h.malloc_id.gpu()) : static_cast<int>(h.address >> kGpuShift);
}

}  // namespace

uint64_t HubTag::st_rowsp(MallocId id, uint64_t row_id, uint64_t row_offset, bool nop) {
  if (id.region() >= (1u << 14) || row_id >= (1ULL << 32) || row_offset >= (1ULL << 16)) {
    throw std::logic_error(fmt::format("st.rowsp region {} row {} offset {} does not fit the store tag", id.region(),
                                       row_id, row_offset));
  }
  return kRowspBit | (nop ? kNopBit : 0) | (static_cast<uint64_t>(id.region()) << 48) | (row_offset << 32) | row_id;
}

uint64_t HubTag::st(uint64_t address) {
  if (address > kLocalMask) throw std::logic_error(fmt::format("st. address {:#x} beyond 49 bits", address));
  return address;
}

HubTag HubTag::decode(uint64_t tag) {
  HubTag t;
  t.rowsp = (tag & kRowspBit) != 0;
  if (!t.rowsp) {
    t.address = tag & kAddressMask;
    return t;
  }
  t.nop = (tag & kNopBit) != 0;
  t.region = static_cast<uint32_t>((tag >> 48) & 0x3FFF);
  t.row_offset = (tag >> 32) & 0xFFFF;
  t.row_id = tag & 0xFFFFFFFFULL;
  return t;
}

// One GPU's hub in three parts, as paper Fig. 7 draws it: the SM side takes the SMs' stores
// (staging lanes, transactions, the RPM), the fabric side puts packets on the network, the
// ingress runs arriving writes through the AAU into memory and reports them.

// Ingress: the GPU's receiver. st.rowsp through the AAU, then the memory write, then the landed
// report per contiguous run of the packet's validity mask; st. straight to memory.
class HubFabric::Ingress final : public PacketReceiver {
 public:
  Ingress(HubFabric& fabric, int g)
      : f_(fabric),
        g_(g),
        gpu_(fabric.cluster_.gpu(g)),
        aau_(fabric.cluster_.sim(), fabric.hub_.aau, static_cast<uint32_t>(g),
             [this](MemoryOp op, uint64_t bytes, Callback done) {
               if (op == MemoryOp::Read) gpu_.dependent_read(bytes, std::move(done));
               else gpu_.memory_write(bytes, std::move(done));
             }),
        line_(fabric.hub_.rpm.entry_bytes),
        granule_(fabric.hub_.rpm.mask_granule_bytes),
        full_mask_(mask_of(0, line_, granule_)) {}

  AddressAllocationUnit& aau() { return aau_; }

  void deliver(Packet&& packet) override { take(packet); }

  // hub.flow_batch_runs (a stated reduction): a run of whole lines that continue one another (a
  // row's next line, or the next st. line) lands as one write; every other message as alone.
  bool deliver_batch(std::span<const Packet> packets) override {
    if (!f_.hub_.flow_batch_runs) return false;
    for (size_t i = 0; i < packets.size();) {
      size_t j = i + 1;
      uint32_t lines = packets[i].messages;
      if (whole_line(packets[i])) {
        while (j < packets.size() && continues(packets[j - 1], packets[j])) lines += packets[j++].messages;
      }
      if (lines == 1) take(packets[i]);
      else land_run(packets[i], lines);
      i = j;
    }
    return true;
  }

  void take(const Packet& packet) {
    if (packet.kind != PacketKind::Write && packet.kind != PacketKind::RowSparseWrite) return;
    if (packet.messages > 1) return land_run(packet, packet.messages);  // hub.flow_line_runs: whole lines
    if (packet.header == kLineMessageHeader) return unpack(static_cast<uint32_t>(packet.cookie));
    // The packet carries what the destination hub needs: the store's encoding in its header,
    // the line's RowOffset in its cookie and the line's validity mask.
    const HubTag t = HubTag::decode(packet.header);
    HubPacket h;
    h.rowsp = t.rowsp;
    h.nop = t.nop;
    if (t.rowsp) {
      h.malloc_id = MallocId::encode(static_cast<uint32_t>(g_), t.region);
      h.row_id = t.row_id;
      h.row_offset = packet.cookie;
    } else {
      h.address = t.address;
    }
    h.valid_mask = packet.byte_mask;
    h.payload_bytes = packet.payload_bytes;
    arrive(packet.src, h);
  }

  void arrive(int src, const HubPacket& h) {
    const uint64_t first = static_cast<uint64_t>(std::countr_zero(h.valid_mask)) * granule_;
    if (h.rowsp) {
      place(src, RowspStore{h.malloc_id, h.row_id, h.row_offset + first, h.payload_bytes, h.nop}, h.valid_mask, false);
    } else {
      land_plain(src, (h.address & kLocalMask) + first, h.payload_bytes, h.valid_mask, false);
    }
  }

  // Whole lines: one, or a run of them (hub.flow_line_runs: Packet::messages lines).
  bool whole_line(const Packet& p) const {
    return (p.kind == PacketKind::Write || p.kind == PacketKind::RowSparseWrite) && p.header != kLineMessageHeader &&
           p.payload_bytes == line_ * p.messages && p.byte_mask == full_mask_;
  }
  // `b` starts at the line after `a`'s last: the same row's next line (the header names the
  // row), or the next st. line (the header is its address).
  bool continues(const Packet& a, const Packet& b) const {
    if (!whole_line(b) || b.kind != a.kind || b.src != a.src) return false;
    const uint64_t after = line_ * a.messages;
    if (a.kind == PacketKind::RowSparseWrite) return b.header == a.header && b.cookie == a.cookie + after;
    return b.header == a.header + after;
  }
  // `lines` whole lines from `first` on: st.rowsp through one AAU placement and one write, st.
  // by one memory write, each line's landed report at its end (a run may span st. rows).
  void land_run(const Packet& first, uint32_t lines) {
    const HubTag t = HubTag::decode(first.header);
    const auto bytes = static_cast<uint32_t>(lines * line_);
    if (t.rowsp) {
      place(first.src,
            RowspStore{MallocId::encode(static_cast<uint32_t>(g_), t.region), t.row_id, first.cookie, bytes, t.nop},
            ~0ULL, true);
      return;
    }
    gpu_.memory_write(bytes, [this, src = first.src, address = t.address, lines] {
      LandedWrite l;
      l.src = src;
      l.bytes = static_cast<uint32_t>(line_);
      for (uint32_t k = 0; k < lines; ++k) {
        l.address = address + k * line_;
        f_.listener_.on_landed(g_, l);
      }
    });
  }

  // A message of the internode path: its lines in the order they were appended, each placed
  // here or, at a relay, sent on to its GPU; the landed reports name the producing GPU.
  void unpack(uint32_t id);

  // A store of this GPU to its own memory: no fabric, the whole store at once.
  void local(const HubTag& t, uint32_t bytes) {
    if (t.rowsp) {
      place(g_, RowspStore{MallocId::encode(static_cast<uint32_t>(g_), t.region), t.row_id, t.row_offset, bytes, t.nop},
            ~0ULL, true);
    } else {
      land_plain(g_, t.address, bytes, ~0ULL, true);
    }
  }

 private:
  struct Landing {  // an st.rowsp write between its arrival and its landed report
    int src;
    RowspStore write;
    uint64_t mask;
    bool whole;
    Placement placement;
  };
  // st.rowsp at this hub: AAU placement, then the memory write, then the landed report per
  // contiguous run of the packet's validity mask (a local store is one run).
  void place(int src, const RowspStore& w, uint64_t mask, bool whole) {
    // The write's details wait in a slab: the callbacks capture an index and stay inline.
    const uint32_t id = landings_.put(Landing{src, w, mask, whole, {}});
    aau_.arrive(w, [this, id](const Placement& pl) {
      if (pl.status == PlacementStatus::RegionOverflow) aau_.throw_if_failed();  // fails the run
      landings_.at(id).placement = pl;
      gpu_.memory_write(landings_.at(id).write.bytes, [this, id] { land_rowsp(id); });
    });
  }

  void land_rowsp(uint32_t id) {
    const Landing landing = landings_.take(id);
    const RowspStore& w = landing.write;
    const Placement& pl = landing.placement;
    LandedWrite l;
    l.src = landing.src;
    l.rowsp = true;
    l.nop = w.nop;
    l.region = w.malloc_id.region();
    l.row_id = w.row_id;
    l.local_row_id = pl.local_row_id;
    if (landing.whole) {
      l.row_offset = w.row_offset;
      l.address = pl.address;
      l.bytes = w.bytes;
      f_.listener_.on_landed(g_, l);
      return;
    }
    const uint64_t line_start = w.row_offset - w.row_offset % line_;
    for_each_run(landing.mask, [&](uint64_t offset, uint64_t bytes) {
      l.row_offset = line_start + offset;
      l.address = pl.address - w.row_offset + l.row_offset;
      l.bytes = static_cast<uint32_t>(bytes);
      f_.listener_.on_landed(g_, l);
    });
  }

  void land_plain(int src, uint64_t address, uint32_t bytes, uint64_t mask, bool whole) {
    gpu_.memory_write(bytes, [this, src, address, bytes, mask, whole] {
      LandedWrite l;
      l.src = src;
      if (whole) {
        l.address = address;
        l.bytes = bytes;
        f_.listener_.on_landed(g_, l);
        return;
      }
      const uint64_t line_start = address - address % line_;
      for_each_run(mask, [&](uint64_t offset, uint64_t run) {
        l.address = line_start + offset;
        l.bytes = static_cast<uint32_t>(run);
        f_.listener_.on_landed(g_, l);
      });
    });
  }

  // Calls fn(offset in line, bytes) for every run of set bits.
  template <typename F>
  void for_each_run(uint64_t mask, F&& fn) const {
    while (mask) {
      const int start = std::countr_zero(mask);
      const int len = std::countr_one(mask >> start);
      fn(static_cast<uint64_t>(start) * granule_, static_cast<uint64_t>(len) * granule_);
      mask = len >= 64 ? 0 : mask & ~(((1ULL << len) - 1) << start);
    }
  }

  HubFabric& f_;
  int g_;
  gpu::Gpu& gpu_;
  AddressAllocationUnit aau_;
  uint64_t line_;
  uint32_t granule_;
  uint64_t full_mask_;  // every granule of a line valid
  Slab<Landing> landings_;
};

// Fabric side: the RPM's PacketPort (or the direct path's): one packet per hub packet, on the
// GPU's shared egress.
class HubFabric::FabricPort final : public PacketPort, public RoomListener, public PacketClient {
 public:
  FabricPort(HubFabric& fabric, int g) : f_(fabric), g_(g) {}

  // hub.internode.route nic or rail: every packet goes through the internode path.
  void use(InternodePath* path) { path_ = path; }
  // Lines are merged only across nodes: on one node nothing crosses, and a port that always
  // says yes would only have its packets built and refused (review, session 24).
  bool merges() const { return f_.hub_.internode.merge && f_.cluster_.network().config().scale_out(); }

  bool can_send(uint32_t peer, uint32_t payload_bytes) const override {
    // The internode path asks the packet's own path in try_send (a partition may hold packets to
    // two GPUs); a merged line needs no window until its message leaves.
    if (path_) return merges() || f_.cluster_.network().can_send_any(g_, payload_bytes, PacketKind::Write);
    // Room is per path: one egress FIFO for every peer at packet fidelity, the NVLink or the
    // NIC window at flow fidelity (both kinds of write are request-class traffic). `peer` is a
    // rank offset or an RPM partition, not a GPU: inside one node every GPU shares the NVLink
    // window, across nodes a partition may hold lines for both paths, so try_send asks the
    // line's own path.
    const Network& net = f_.cluster_.network();
    if (net.config().scale_out()) return net.can_send_any(g_, payload_bytes, PacketKind::Write);
    (void)peer;
    return net.can_send_to(g_, g_, payload_bytes, PacketKind::Write);
  }

  bool accepts_nothing(uint32_t payload_bytes) const override {
    if (path_ && merges()) return false;
    return !f_.cluster_.network().can_send_any(g_, payload_bytes, PacketKind::Write);
  }

  bool try_send(const HubPacket& h) override {
    // The destination is in the packet: the MallocID's GPU, or the GPU bits of a peer address.
    const int dst = destination_of(h);
    if (path_) {
      if (!path_->try_send(h, dst)) return false;
      ++n_.packets;
      n_.payload_bytes += h.payload_bytes;
      return true;
    }
    last_dst_ = dst;
    // A run of lines (hub.flow_line_runs) is offered when its first line would be accepted.
    if (!f_.cluster_.network().can_send_to(g_, dst, h.payload_bytes / h.lines, PacketKind::Write)) return false;
    Packet p;
    p.src = g_;
    p.dst = dst;
    p.payload_bytes = h.payload_bytes;
    p.messages = static_cast<uint8_t>(h.lines);
    p.kind = h.rowsp ? PacketKind::RowSparseWrite : PacketKind::Write;
    p.header = header_of(h);
    p.byte_mask = h.valid_mask;
    p.cookie = h.rowsp ? h.row_offset : 0;  // the line's RowOffset, full width (acks ignore it)
    p.client = this;
    p.ack_awaited = false;  // the hub counts its acks; the DAM reacts to local write completions
    p.flow_batch = true;    // lines are independent writes: a flow batch may carry them (net.flow_batch_bytes)
    f_.cluster_.network().send(std::move(p));
    n_.packets += h.lines;
    n_.payload_bytes += h.payload_bytes;
    return true;
  }

  void notify_when_ready(uint32_t peer, Callback ready) override {
    if (path_) return path_->wait_room(std::move(ready));
    // The network keeps one request per listener and path; any room wakes every waiter, and
    // a waiter whose path is still closed asks again.
    // Waited on the path of the last line offered: after a refusal that path is closed; after
    // can_send or accepts_nothing said no, every path of this GPU is.
    (void)peer;
    room_waiters_.push_back(std::move(ready));
    f_.cluster_.network().request_room_to(g_, last_dst_ < 0 ? g_ : last_dst_, this);
  }

  void on_room(int) override { run_waiters(room_waiters_, room_scratch_); }

  void on_ack(const Packet&) override { ++n_.network_acks; }

  const EgressCounters& counters() const { return n_; }

 private:
  // A packet's header: its store encoding without the RowOffset, which rows above 64 KiB
  // (hub.rat.row_offset_bits > 16) would overflow; the GPU bits of a peer address are in the
  // packet's destination.
  static uint64_t header_of(const HubPacket& h) {
    return h.rowsp ? HubTag::st_rowsp(h.malloc_id, h.row_id, 0, h.nop) : HubTag::st(h.address & kLocalMask);
  }

  HubFabric& f_;
  int g_;
  InternodePath* path_ = nullptr;
  std::vector<Callback> room_scratch_;
  std::vector<Callback> room_waiters_;
  int last_dst_ = -1;  // the destination of the last line offered to try_send
  EgressCounters n_;
};

// SM side: the GPU's store port. Stores wait in staging lanes, are cut into line-bounded
// transactions and go to the RPM (one lane per partition) or straight to the fabric side.
class HubFabric::SmPort final : public gpu::StorePort {
 public:
  SmPort(HubFabric& fabric, int g, FabricPort& port, Ingress& ingress)
      : f_(fabric),
        g_(g),
        n_(fabric.cluster_.gpus()),
        port_(port),
        ingress_(ingress),
        line_(fabric.hub_.rpm.entry_bytes),
        granule_(fabric.hub_.rpm.mask_granule_bytes) {
    const int n = fabric.cluster_.gpus();
    if (fabric.cfg_.rpm && n > 1) {
      rpm_ = std::make_unique<RuntimePacketManager>(
          fabric.cluster_.sim(), fabric.hub_.rpm, std::min<uint32_t>(static_cast<uint32_t>(n - 1), fabric.hub_.rpm.partitions),
          port);
    }
    const size_t lanes = rpm_ ? std::min<size_t>(static_cast<size_t>(n - 1), fabric.hub_.rpm.partitions) : 1;
    const uint64_t staging_limit = fabric.cluster_.gpu_config().store_staging_bytes;
    for (size_t i = 0; i < lanes; ++i) lanes_.emplace_back(fabric.cluster_.sim(), staging_limit);
  }

  RuntimePacketManager* rpm() { return rpm_.get(); }

  bool try_store(const gpu::StoreRequest& store, Callback retry) override {
    const HubTag t = HubTag::decode(store.tag);
    const int dst = static_cast<int>(store.dst_gpu);
    const auto bytes = static_cast<uint32_t>(store.bytes);
    if (dst == g_) {  // local: straight to this hub's AAU (st.rowsp) or memory (st.)
      ingress_.local(t, bytes);
      return true;
    }
    Lane& lane = lanes_[rpm_ ? partition_of(dst) : 0];
    if (!lane.staging.admit(store, std::move(retry))) return false;
    pump(lane);
    return true;
  }

 private:
  // The SM-to-hub path: one FIFO to the egress without an RPM (stores leave in issue order);
  // with the RPM, one per peer partition (a store waiting for a full partition holds up only
  // stores to that peer).
  struct Lane {
    Lane(Simulator& sim, uint64_t limit) : staging(sim, limit) {}
    StoreStaging staging;
    bool waiting = false;  // for room in the RPM partition or the egress
  };

  // Partitions in rank-offset order (peer p is GPU g + 1 + p mod N, as NCCL orders its peers):
  // schedulers that poll their partitions round-robin in step then address a permutation of
  // the GPUs rather than all the same one.
  uint32_t peer_of(int dst) const { return static_cast<uint32_t>((dst - g_ - 1 + n_) % n_); }
  // With more peers than partitions (hub.rpm.partitions), peers share them round-robin.
  uint32_t partition_of(int dst) const { return peer_of(dst) % static_cast<uint32_t>(lanes_.size()); }

  // Cuts a lane's staged stores into transactions and hands them on, in order, while there is room.
  void pump(Lane& lane) {
    while (!lane.staging.empty()) {
      const StoreStaging::Staged& p = lane.staging.front();
      const HubTag tag = HubTag::decode(p.tag);
      const uint64_t tx = tag.rowsp ? f_.cfg_.rowsp_transaction_bytes : f_.cfg_.st_transaction_bytes;
      const uint64_t at = (tag.rowsp ? tag.row_offset : tag.address) + p.done;
      const uint64_t piece = std::min({tx, p.bytes - p.done, line_ - at % line_});
      const uint32_t peer = rpm_ ? partition_of(p.dst) : peer_of(p.dst);
      const bool may_run = tag.rowsp || f_.hub_.flow_line_runs_st;
      if (const uint32_t lines = may_run ? run_lines(p, at, tx, peer) : 0; lines >= (rpm_ ? 1u : 2u)) {
        if (!send_run(lane, p, tag, at, tx, peer, lines)) return;
        lane.staging.took(static_cast<uint64_t>(lines) * line_);
        continue;
      }
      if (rpm_) {
        if (!rpm_->try_store(peer, remote_store(p, tag, at, static_cast<uint32_t>(piece)))) return wait_rpm(lane, peer);
      } else {
        HubPacket h = packet_header(p, tag, peer, at - at % line_);
        h.valid_mask = mask_of(at % line_, piece, granule_);
        h.payload_bytes = static_cast<uint32_t>(piece);
        h.stores_merged = 1;
        if (!port_.try_send(h)) return wait_port(lane, peer);
      }
      lane.staging.took(piece);
    }
    lane.staging.release();
  }

  // hub.flow_line_runs: the whole lines of the staged st.rowsp store from `at` that may travel as
  // one run (at most the run limit, and with the RPM what its partition has free). With the RPM
  // one line is a run too (it may join the partition's latest run of the row); without it a run
  // needs two. The combine's st. stores stay lines unless hub.flow_line_runs_st (then a run is one
  // store's lines: the RPM never joins st. runs, docs/hub/wiring.md "Line runs").
  uint32_t run_lines(const StoreStaging::Staged& p, uint64_t at, uint64_t tx, uint32_t peer) const {
    if (f_.run_limit_ < 2 || at % line_ != 0 || (!rpm_ && tx < line_)) return 0;
    uint64_t lines = std::min<uint64_t>((p.bytes - p.done) / line_, f_.run_limit_);
    if (rpm_) lines = std::min<uint64_t>(lines, rpm_->pool().free_entries(peer));
    return static_cast<uint32_t>(lines);
  }

  // Hands a run of `lines` whole lines on as one item: one RPM entry, or one packet of the
  // direct path. False (the lane waits) if refused.
  bool send_run(Lane& lane, const StoreStaging::Staged& p, const HubTag& tag, uint64_t at, uint64_t tx, uint32_t peer,
                uint32_t lines) {
    const auto bytes = static_cast<uint32_t>(lines * line_);
    if (rpm_) {
      // Each line is the transactions its warp stores cut it into.
      const auto transactions = static_cast<uint32_t>(lines * ((line_ + tx - 1) / tx));
      if (rpm_->try_store_run(peer, remote_store(p, tag, at, bytes), lines, transactions, f_.run_limit_)) return true;
      wait_rpm(lane, peer);
      return false;
    }
    HubPacket h = packet_header(p, tag, peer, at);
    h.valid_mask = mask_of(0, line_, granule_);
    h.payload_bytes = bytes;
    h.stores_merged = lines;
    h.lines = lines;
    if (port_.try_send(h)) return true;
    wait_port(lane, peer);
    return false;
  }

  // The RPM's view of `bytes` of a staged store from `at`: st.rowsp names its row, st. its peer
  // address (a peer address carries its GPU: UVA gives each GPU's memory its own range).
  static RemoteStore remote_store(const StoreStaging::Staged& p, const HubTag& tag, uint64_t at, uint32_t bytes) {
    if (tag.rowsp) {
      return RemoteStore::from(
          RowspStore{MallocId::encode(static_cast<uint32_t>(p.dst), tag.region), tag.row_id, at, bytes, tag.nop});
    }
    return RemoteStore::plain((static_cast<uint64_t>(p.dst) << kGpuShift) | at, bytes);
  }

  // A direct-path packet for the staged store's line at `line_start`, its payload still to set.
  HubPacket packet_header(const StoreStaging::Staged& p, const HubTag& tag, uint32_t peer, uint64_t line_start) const {
    HubPacket h;
    h.peer = peer;
    h.rowsp = tag.rowsp;
    h.nop = tag.nop;
    if (tag.rowsp) {
      h.malloc_id = MallocId::encode(static_cast<uint32_t>(p.dst), tag.region);
      h.row_id = tag.row_id;
      h.row_offset = line_start;
    } else {
      h.address = (static_cast<uint64_t>(p.dst) << kGpuShift) | line_start;
    }
    h.granule_bytes = granule_;
    h.first_store = f_.cluster_.sim().now();
    return h;
  }

  void wait_rpm(Lane& lane, uint32_t peer) {
    if (lane.waiting) return;
    lane.waiting = true;
    rpm_->notify_when_space(peer, [this, &lane] {
      lane.waiting = false;
      pump(lane);
    });
  }

  void wait_port(Lane& lane, uint32_t peer) {
    if (lane.waiting) return;
    lane.waiting = true;
    port_.notify_when_ready(peer, [this, &lane] {
      lane.waiting = false;
      pump(lane);
    });
  }

  HubFabric& f_;
  int g_;
  int n_;
  FabricPort& port_;
  Ingress& ingress_;
  std::unique_ptr<RuntimePacketManager> rpm_;
  uint64_t line_;
  uint32_t granule_;
  std::deque<Lane> lanes_;  // deque: callbacks hold references to lanes
};

// The three parts of one GPU's hub (the SM side refers to the other two).
class HubFabric::Node {
 public:
  Node(HubFabric& fabric, int g) : ingress(fabric, g), port(fabric, g), sm(fabric, g, port, ingress) {
    if (fabric.hub_.internode.route == InternodeRoute::Direct) return;
    const NetConfig& net = fabric.cluster_.network().config();
    internode = std::make_unique<InternodePath>(fabric.cluster_.sim(), fabric.cluster_.network(), fabric.hub_, g,
                                                net.scale_out() ? net.gpus_per_node : net.gpus, fabric.messages_, &port);
    port.use(internode.get());
  }
  Ingress ingress;
  FabricPort port;
  SmPort sm;
  std::unique_ptr<InternodePath> internode;  // hub.internode.route nic or rail
};

void HubFabric::Ingress::unpack(uint32_t id) {
  const LineMessage m = f_.messages_.take(id);
  ++f_.unpacked_;
  for (const HubPacket& h : m.lines) {
    const int dst = destination_of(h);
    if (dst == g_) arrive(m.src, h);
    else f_.nodes_[g_]->internode->forward(m.src, h, dst);
  }
}

HubFabric::HubFabric(Cluster& cluster, const HubConfig& hub, const HubFabricConfig& config, HubListener& listener)
    : cluster_(cluster),
      hub_(hub),
      cfg_(config),
      listener_(listener),
      registry_(static_cast<uint32_t>(cluster.gpus())) {
  if (hub_.rpm.entry_bytes > cluster.network().config().max_payload_bytes) {
    throw UserError("hub.rpm.entry_bytes", fmt::format("{} B lines do not fit the fabric's {} B packets",
                                                       hub_.rpm.entry_bytes, cluster.network().config().max_payload_bytes));
  }
  if (hub_.rpm.entry_bytes / hub_.rpm.mask_granule_bytes > 64) {
    throw UserError("hub.rpm.mask_granule_bytes", "more than 64 granules per line");
  }
  if (cfg_.rpm && hub_.rpm.timer_bypass == Time::zero()) {
    // Partly merged .nop entries would then wait for the kernel-end flush, and a partition full
    // of them stops the routing kernel's stores before its end: a deadlock, not a design point.
    throw UserError("hub.rpm.timer_bypass", "the MoE-Hub systems need the timer bypass (0 ns turns it off)");
  }
  for (const uint32_t tx : {cfg_.rowsp_transaction_bytes, cfg_.st_transaction_bytes}) {
    if (tx == 0 || tx % hub_.rpm.mask_granule_bytes != 0) {
      throw UserError("systems.moehub", fmt::format("store transactions of {} B are not whole {} B mask granules", tx,
                                                    hub_.rpm.mask_granule_bytes));
    }
  }
  const NetConfig& net = cluster.network().config();
  if (hub_.flow_line_runs && net.fidelity == NetFidelity::Flow && hub_.internode.route == InternodeRoute::Direct) {
    // Runs need flow batches of two lines or more; hub.flow_run_bytes may make them longer than a batch.
    const uint32_t limit = hub_.flow_run_bytes > 0 ? hub_.flow_run_bytes : net.flow_batch_bytes;
    if (net.flow_batch_bytes / hub_.rpm.entry_bytes >= 2) {
      run_limit_ = std::min<uint32_t>(limit / hub_.rpm.entry_bytes, UINT8_MAX);  // Packet::messages
    }
  }
  for (int g = 0; g < cluster.gpus(); ++g) {
    nodes_.push_back(std::make_unique<Node>(*this, g));
    registry_.attach(static_cast<uint32_t>(g), nodes_.back()->ingress.aau());
    cluster.set_store_port(g, &nodes_.back()->sm);
    cluster.set_receiver(g, &nodes_.back()->ingress);
  }
}

HubFabric::~HubFabric() = default;

AddressAllocationUnit& HubFabric::aau(int g) { return nodes_.at(g)->ingress.aau(); }

void HubFabric::flush(int g) {
  if (auto* r = nodes_.at(g)->sm.rpm()) r->flush();
  if (auto& path = nodes_.at(g)->internode) path->flush();
}

std::vector<std::string> HubFabric::internode_violations() const {
  std::vector<std::string> v;
  uint64_t sent = 0;
  for (int g = 0; g < nodes_.size(); ++g) {
    const auto& path = nodes_[g]->internode;
    if (!path) continue;
    sent += path->counters().messages;
    if (!path->idle()) v.push_back(fmt::format("GPU {}'s internode path still holds lines after the run", g));
  }
  if (sent != unpacked_) v.push_back(fmt::format("{} internode messages sent, {} read by the hubs", sent, unpacked_));
  return v;
}

const CounterTable<EgressCounters>& EgressCounters::table() {
  using S = EgressCounters;
  static const CounterTable<S> t{{"packets", "packets", "packets the hubs put on the network", &S::packets},
                                 {"payload_bytes", "B", "payload bytes in those packets", &S::payload_bytes},
                                 {"network_acks", "acks", "network acknowledgements of those packets", &S::network_acks}};
  return t;
}

HubFabricCounters HubFabric::counters() const {
  HubFabricCounters c;
  if (cfg_.rpm) c.rpm.emplace();
  if (hub_.internode.route != InternodeRoute::Direct) c.internode.emplace();
  for (const auto& node : nodes_) {
    if (const auto& path = node->internode) {
      InternodeCounters::table().add(*c.internode, path->counters());
      c.relay_peak_bytes = std::max(c.relay_peak_bytes, path->relay_peak_bytes());
    }
    AauCounters::table().add(c.aau, node->ingress.aau().counters());
    if (auto* r = node->sm.rpm(); r && c.rpm) RpmCounters::table().add(*c.rpm, r->counters());
    EgressCounters::table().add(c.egress, node->port.counters());
  }
  return c;
}

}  // namespace moehub
