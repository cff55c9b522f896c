#pragma once
// The source side of transfers in the packet fidelity: one engine per GPU (a copy engine, or
// the CTAs of an NCCL kernel) cuts every active transfer into packets and feeds them into the
// GPU's egress FIFO as fast as the FIFO accepts them, round-robin over active transfers (so
// concurrent transfers to different peers interleave packet by packet).

#include <cstdint>
#include <vector>

#include "net/packet.h"
#include "net/packet_network.h"
#include "sim/callback.h"
#include "sim/per_gpu.h"
#include "sim/simulator.h"

namespace moehub {

class TransferEngine final : public PacketClient, public RoomListener {
 public:
  TransferEngine(PacketNetwork& net, Simulator& sim);

  // `on_sent` (optional) runs when the transfer's last packet has entered the egress FIFO.
  void start(int src, int dst, uint64_t bytes, int priority, const StreamOptions& options, Callback on_complete,
             Callback on_sent = {});

  void on_delivered(const Packet& p) override;
  void on_ack(const Packet& p) override;
  void on_room(int gpu) override;

 private:
  struct Transfer {
    int src = 0;
    int dst = 0;
    uint64_t bytes = 0;
    uint64_t sent = 0;
    uint64_t done = 0;  // bytes delivered, or acknowledged when complete_on_ack
    uint32_t packet_payload = 0;
    PacketKind kind = PacketKind::Write;
    bool complete_on_ack = false;
    uint8_t priority = 0;
    Callback on_complete;
    Callback on_sent;
  };
  struct Engine {
    std::vector<uint32_t> active;  // transfers with packets left to send, in start order
    size_t next = 0;
    bool waiting_room = false;
    bool pumping = false;
  };

  void pump(int gpu);
  void progress(uint32_t id, uint64_t bytes);

  PacketNetwork& net_;
  Simulator& sim_;
  std::vector<Transfer> transfers_;
  std::vector<uint32_t> free_;
  PerGpu<Engine> engines_;
};

}  // namespace moehub
