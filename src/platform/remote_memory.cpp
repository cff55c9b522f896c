#include "platform/remote_memory.h"

#include <algorithm>
#include <cstdint>

#include "platform/cluster.h"

namespace moehub {

// One per GPU: its load port (issuing read requests), its receiver (serving requests, taking
// responses and tagged writes) and the queues that wait for room in its egress FIFOs.
class RemoteMemory::Port final : public gpu::LoadPort, public PacketReceiver, public RoomListener {
 public:
  Port(RemoteMemory& owner, int gpu) : owner_(owner), gpu_(gpu) {}

  void load(const gpu::LoadRequest& r, Callback arrived) override {
    owner_.read(gpu_, static_cast<int>(r.target_gpu), r.bytes, std::move(arrived));
  }

  // Requests are taken only while no response waits for egress room (back-pressure).
  bool can_accept(const Packet& p) override {
    if (p.kind == PacketKind::ReadRequest && !responses_.empty()) {
      refused_ = true;
      return false;
    }
    return true;
  }

  void deliver(Packet&& p) override {
    switch (p.kind) {
      case PacketKind::ReadRequest: serve(p); break;
      case PacketKind::ReadResponse: owner_.response_in(gpu_, p.cookie, p.payload_bytes); break;
      default:
        // Only a thread block's stores carry a tag in their cookie; a transfer's cookie is the
        // transfer engine's own id.
        if (is_write(p.kind)) write_in(p.payload_bytes, p.client && p.client->cookie_is_for_receiver() ? p.cookie : 0);
        break;
    }
  }

  void on_room(int) override {
    waiting_request_room_ = false;
    waiting_response_room_ = false;
    waiting_nic_room_ = false;
    pump();
  }

  void send_requests(int target, uint64_t read_id, uint64_t bytes) {
    requests_.push(path_of(target), {target, read_id, bytes, 0});
    pump();
  }

 private:
  struct Pending {
    int peer;
    uint64_t read_id;
    uint64_t bytes;  // requests: bytes still to ask for; responses: the response's payload
    uint64_t seq;    // arrival order, across paths
  };

  // Messages waiting for their path's send window, one FIFO per path: [0] NVLink (every peer of
  // the node shares the GPU's window), [1 + p] the NIC pair to GPU p on another node. A closed
  // NIC pair holds back only its own messages (one RC queue pair each); the oldest message whose
  // path is open goes first. On one node there is one path, so this is the single FIFO it was.
  // Only non-empty paths hold a FIFO (from a pool, returned when it empties): an empty deque
  // still allocates its first block, and GPUs x (1 + GPUs) of them took 1.4 GB at 1024 GPUs.
  class PathQueues {
   public:
    explicit PathQueues(size_t paths) : slot_(paths, kNone) {}
    bool empty() const { return size_ == 0; }
    void push(size_t path, Pending p) {
      if (slot_[path] == kNone) {
        if (free_.empty()) {
          free_.push_back(static_cast<uint32_t>(pool_.size()));
          pool_.emplace_back();
        }
        slot_[path] = free_.back();
        free_.pop_back();
        active_.push_back(path);
      }
      p.seq = next_seq_++;
      queue(path).push_back(p);
      ++size_;
    }
    // The path whose front is oldest among those `open(front)` accepts; SIZE_MAX if none.
    template <class Open>
    size_t oldest(Open&& open) {
      size_t best = SIZE_MAX;
      for (size_t path : active_) {
        const Pending& f = queue(path).front();
        if ((best == SIZE_MAX || f.seq < queue(best).front().seq) && open(f)) best = path;
      }
      return best;
    }
    Pending& front(size_t path) { return queue(path).front(); }
    void pop(size_t path) {
      queue(path).pop_front();
      --size_;
      if (!queue(path).empty()) return;
      free_.push_back(slot_[path]);
      slot_[path] = kNone;
      active_.erase(std::find(active_.begin(), active_.end(), path));
    }

   private:
    static constexpr uint32_t kNone = UINT32_MAX;
    std::deque<Pending>& queue(size_t path) { return pool_[slot_[path]]; }
    std::vector<uint32_t> slot_;  // per path: its FIFO in pool_, or kNone while it is empty
    std::vector<std::deque<Pending>> pool_;
    std::vector<uint32_t> free_;  // FIFOs of pool_ no path holds
    std::vector<size_t> active_;  // non-empty paths
    size_t size_ = 0;
    uint64_t next_seq_ = 0;
  };

  size_t paths() const {
    const NetConfig& cfg = owner_.cluster_.network().config();
    return cfg.scale_out() ? 1 + static_cast<size_t>(cfg.gpus) : 1;
  }
  bool crosses(int peer) const {
    const NetConfig& cfg = owner_.cluster_.network().config();
    return cfg.scale_out() && peer / cfg.gpus_per_node != gpu_ / cfg.gpus_per_node;
  }
  size_t path_of(int peer) const { return crosses(peer) ? 1 + static_cast<size_t>(peer) : 0; }

  // True if the path to `peer` takes the message now; else asks to be woken when it opens.
  bool open(int peer, uint64_t bytes, PacketKind kind) {
    Network& net = owner_.cluster_.network();
    if (net.can_send_to(gpu_, peer, static_cast<uint32_t>(bytes), kind)) return true;
    bool& waiting = crosses(peer) ? waiting_nic_room_
                    : kind == PacketKind::ReadResponse ? waiting_response_room_ : waiting_request_room_;
    if (!waiting) {
      waiting = true;
      // Any NIC pair of this GPU wakes it (the NIC window counts messages of both classes).
      if (crosses(peer)) net.request_room_to(gpu_, peer, this);
      else if (kind == PacketKind::ReadResponse) net.request_response_room(gpu_, this);
      else net.request_room(gpu_, this);
    }
    return false;
  }

  void write_in(uint64_t bytes, uint64_t tag) {
    Cluster& c = owner_.cluster_;
    const uint64_t signal_tag = tag & 0xffffffffULL;
    const uint64_t code = tag >> 32;
    if (code == 0) {
      c.deliver_write(gpu_, bytes, signal_tag);
      return;
    }
    c.deliver_write(gpu_, bytes, signal_tag, [this, code, bytes] {
      if (owner_.on_write_) owner_.on_write_(gpu_, code - 1, bytes);
    });
  }

  // The target reads the requested bytes from its memory, then queues the response.
  void serve(const Packet& request) {
    const int reader = request.src;
    // The request carries the read's id (cookie) and the length asked for (header).
    const uint64_t id = request.cookie;
    const uint64_t bytes = request.header;
    owner_.cluster_.gpu(gpu_).memory_read(bytes, [this, reader, id, bytes] {
      responses_.push(path_of(reader), {reader, id, bytes, 0});
      pump();
    });
  }

  // Re-entrant calls (inject may notify room listeners, this port among them) only ask the
  // running pump to go round again.
  void pump() {
    if (pumping_) {
      repump_ = true;
      return;
    }
    pumping_ = true;
    do {
      repump_ = false;
      pump_once();
    } while (repump_);
    pumping_ = false;
  }

  // Each message asks its own path's window (NVLink, or the NIC pair across nodes).
  void pump_once() {
    Network& net = owner_.cluster_.network();
    for (;;) {
      const size_t path = responses_.oldest([&](const Pending& r) { return open(r.peer, r.bytes, PacketKind::ReadResponse); });
      if (path == SIZE_MAX) break;
      const Pending r = responses_.front(path);
      Packet p;
      p.src = gpu_;
      p.dst = r.peer;
      p.payload_bytes = static_cast<uint32_t>(r.bytes);
      p.kind = PacketKind::ReadResponse;
      p.cookie = r.read_id;
      responses_.pop(path);
      net.send(std::move(p));
    }
    if (responses_.empty() && refused_) {
      refused_ = false;
      net.resume_ingress(gpu_);
    }
    for (;;) {
      const size_t path = requests_.oldest([&](const Pending& q) { return open(q.peer, 0, PacketKind::ReadRequest); });
      if (path == SIZE_MAX) break;
      Pending& q = requests_.front(path);
      // A request asks for one response message's worth on the way back.
      const uint64_t ask = std::min<uint64_t>(q.bytes, net.message_limit_to(q.peer, gpu_));
      Packet p;
      p.src = gpu_;
      p.dst = q.peer;
      p.payload_bytes = 0;  // header only: address and length travel in the header flit
      p.kind = PacketKind::ReadRequest;
      p.cookie = q.read_id;
      p.header = ask;
      q.bytes -= ask;
      if (q.bytes == 0) requests_.pop(path);
      net.send(std::move(p));
    }
  }

  RemoteMemory& owner_;
  int gpu_;
  PathQueues requests_{paths()};
  PathQueues responses_{paths()};
  bool waiting_request_room_ = false;
  bool waiting_response_room_ = false;
  bool waiting_nic_room_ = false;
  bool refused_ = false;
  bool pumping_ = false;
  bool repump_ = false;
};

RemoteMemory::RemoteMemory(Cluster& cluster) : cluster_(cluster) {
  for (int g = 0; g < cluster.gpus(); ++g) {
    ports_.push_back(std::make_unique<Port>(*this, g));
    cluster.gpu(g).set_load_port(ports_.back().get());
    cluster.set_receiver(g, ports_.back().get());
  }
}

RemoteMemory::~RemoteMemory() = default;

void RemoteMemory::read(int reader, int target, uint64_t bytes, Callback done) {
  ++reads_;
  read_bytes_ += bytes;
  if (bytes == 0) {
    cluster_.sim().schedule_in(Time::zero(), std::move(done));
    return;
  }
  if (reader == target) {  // a local copy: read and write the GPU's own memory
    gpu::Gpu& g = cluster_.gpu(reader);
    g.memory_read(bytes, [&g, bytes, done = std::move(done)]() mutable { g.memory_write(bytes, std::move(done)); });
    return;
  }
  const uint64_t id = next_read_++;
  reads_in_flight_.emplace(id, Read{bytes, std::move(done)});
  ports_.at(reader)->send_requests(target, id, bytes);
}

void RemoteMemory::response_in(int reader, uint64_t read_id, uint64_t bytes) {
  cluster_.gpu(reader).memory_write(bytes, [this, read_id, bytes] {
    auto it = reads_in_flight_.find(read_id);
    if (it == reads_in_flight_.end()) throw std::logic_error("RemoteMemory: response for an unknown read");
    it->second.bytes_left -= bytes;
    if (it->second.bytes_left > 0) return;
    Callback done = std::move(it->second.done);
    reads_in_flight_.erase(it);
    done();
  });
}

}  // namespace moehub
