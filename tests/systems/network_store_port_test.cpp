// NetworkStorePort: a thread block's store reaches its destination's receiver, which alone
// decodes the tag, whether it crosses the fabric as packets or stays on the GPU.

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "platform/network_store_port.h"
#include "platform/remote_memory.h"
#include "systems/system_run.h"

namespace moehub {
namespace {

using test::SystemRun;

class RecordingReceiver final : public PacketReceiver {
 public:
  void deliver(Packet&& p) override { seen.push_back(p); }
  std::vector<Packet> seen;
};

gpu::StoreRequest store_to(uint32_t src, uint32_t dst, uint64_t bytes, uint64_t tag) {
  gpu::StoreRequest s;
  s.src_gpu = src;
  s.dst_gpu = dst;
  s.bytes = bytes;
  s.tag = tag;
  return s;
}

TEST(NetworkStorePort, LocalStoreReachesTheReceiverWithItsTagAndNoPacket) {
  SystemRun r("ideal", {"run.gpus=2"}, false);
  RecordingReceiver rx;
  r.cluster->set_receiver(0, &rx);
  NetworkStorePort port(*r.cluster, 0);
  EXPECT_TRUE(port.try_store(store_to(0, 0, 3000, 0x700000005ULL), [] {}));
  ASSERT_EQ(rx.seen.size(), 1u);  // at once: no fabric to cross
  EXPECT_EQ(rx.seen[0].src, 0);
  EXPECT_EQ(rx.seen[0].dst, 0);
  EXPECT_EQ(rx.seen[0].payload_bytes, 3000u);  // one write, not cut into packets
  EXPECT_EQ(rx.seen[0].cookie, 0x700000005ULL);
  EXPECT_EQ(rx.seen[0].kind, PacketKind::Write);
  ASSERT_NE(rx.seen[0].client, nullptr);
  EXPECT_TRUE(rx.seen[0].client->cookie_is_for_receiver());
  EXPECT_EQ(r.cluster->network().stats()["packets_injected"].get<uint64_t>(), 0u);
}

TEST(NetworkStorePort, RemoteMemoryDecodesALocalTaggedStoreAsItDoesARemoteOne) {
  // Its tag carries a code for the system as well as a signal: both must come out.
  SystemRun r("ideal", {"run.gpus=2"}, false);
  RemoteMemory memory(*r.cluster);
  std::map<std::pair<int, uint64_t>, uint64_t> bytes_by;  // (GPU, code) -> bytes reported
  memory.on_write([&](int gpu, uint64_t code, uint64_t bytes) { bytes_by[{gpu, code}] += bytes; });
  const gpu::SignalId local = r.cluster->gpu(0).create_signal("rows in");
  const gpu::SignalId remote = r.cluster->gpu(1).create_signal("rows in");
  NetworkStorePort port(*r.cluster, 0);
  EXPECT_TRUE(port.try_store(store_to(0, 0, 512, RemoteMemory::tag(local, 41)), [] {}));
  EXPECT_TRUE(port.try_store(store_to(0, 1, 512, RemoteMemory::tag(remote, 42)), [] {}));
  r.sim.run();
  const std::map<std::pair<int, uint64_t>, uint64_t> expected{{{0, 41}, 512}, {{1, 42}, 512}};  // the remote one in packets
  EXPECT_EQ(bytes_by, expected);
  EXPECT_EQ(r.cluster->gpu(0).signal_value(local), 512);
  EXPECT_EQ(r.cluster->gpu(1).signal_value(remote), 512);
}

TEST(NetworkStorePort, RemoteStoreCrossesTheFabricInPacketsCarryingTheTag) {
  SystemRun r("ideal", {"run.gpus=2"}, false);
  RecordingReceiver rx;
  r.cluster->set_receiver(1, &rx);
  NetworkStorePort port(*r.cluster, 0);
  const uint32_t max_payload = r.cluster->network().config().max_payload_bytes;
  EXPECT_TRUE(port.try_store(store_to(0, 1, 2 * max_payload + 64, 9), [] {}));
  EXPECT_TRUE(rx.seen.empty());  // not before the packets have crossed
  r.sim.run();
  ASSERT_EQ(rx.seen.size(), 3u);
  uint64_t bytes = 0;
  for (const Packet& p : rx.seen) {
    EXPECT_EQ(p.src, 0);
    EXPECT_EQ(p.cookie, 9u);
    bytes += p.payload_bytes;
  }
  EXPECT_EQ(bytes, 2ULL * max_payload + 64);
}

}  // namespace
}  // namespace moehub
