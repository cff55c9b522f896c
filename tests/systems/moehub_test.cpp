// MoE-Hub and its ablations on small layers: the mechanisms, not the paper's numbers.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config_builder.h"
#include "gpu/gpu.h"
#include "gpu/gpu_test_support.h"
#include "hub/data_availability_manager.h"
#include "systems/param_catalog.h"
#include "config/preset_catalog.h"
#include "hub/rowsp.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "net/flow_network.h"
#include "net/net_test_util.h"
#include "sim/error.h"
#include "platform/experiment.h"
#include "systems/moehub/dispatch_trace.h"
#include "systems/moehub/hub_fabric.h"
#include "systems/moehub/internode_path.h"
#include "systems/moehub/moehub_state.h"
#include "systems/system_registry.h"
#include "systems/moehub_layer_setup.h"

namespace moehub {
namespace {

using test::hub;
using test::LayerSetup;
using test::small_layer;


TEST(HubTag, StRowspAndStRoundTrip) {
  const uint64_t tag = HubTag::st_rowsp(MallocId::encode(3, 5), 123456, 8192, true);
  const HubTag t = HubTag::decode(tag);
  EXPECT_TRUE(t.rowsp);
  EXPECT_TRUE(t.nop);
  EXPECT_EQ(t.region, 5u);
  EXPECT_EQ(t.row_id, 123456u);
  EXPECT_EQ(t.row_offset, 8192u);
  const HubTag p = HubTag::decode(HubTag::st((1ULL << 38) + 640));
  EXPECT_FALSE(p.rowsp);
  EXPECT_EQ(p.address, (1ULL << 38) + 640);
  EXPECT_THROW(HubTag::st_rowsp(MallocId::encode(0, 0), 1ULL << 32, 0, false), std::logic_error);
}

TEST(MoeHubSystems, VerifyPassesForEveryVariant) {
  const LayerSetup s({}, true);
  for (const auto& o : s.run("mh-base,mh-pkt,mh-dep,moehub", true)) {
    EXPECT_TRUE(o.functional_passed) << o.name << ": " << o.result.functional.dump();
  }
  // The polling variants' other software protocols read the rows only once released as well.
  for (const char* signal : {"source-chunks", "hub-tile-flags"}) {
    const LayerSetup v({std::string("systems.moehub.software_signal=") + signal}, true);
    for (const auto& o : v.run("mh-base,mh-pkt", true)) {
      EXPECT_TRUE(o.functional_passed) << o.name << " " << signal << ": " << o.result.functional.dump();
    }
  }
}

TEST(MoeHubSystems, TinyRatEvictsAndRestoresAndStillVerifies) {
  const LayerSetup s({"hub.rat.entries=4", "hub.rat.banks=4"}, true);
  for (const auto& o : s.run("mh-base,moehub", true)) {
    EXPECT_TRUE(o.functional_passed) << o.name << ": " << o.result.functional.dump();
    EXPECT_GT(hub(o)["rat_evictions"].get<uint64_t>(), 0u) << o.name;
    EXPECT_GT(hub(o)["rat_restores"].get<uint64_t>(), 0u) << o.name;
  }
}

TEST(MoeHubSystems, TinyRpmBufferStillVerifies) {
  const LayerSetup s({"hub.rpm.entries_per_peer=2"}, true);
  for (const auto& o : s.run("mh-pkt,moehub", true)) {
    EXPECT_TRUE(o.functional_passed) << o.name << ": " << o.result.functional.dump();
  }
}

TEST(MoeHubSystems, RowsBeyond64KiBKeepTheirRowOffsetOnTheWire) {
  // 32700 bf16 values (65400 B) and a 256 B metadata column: the metadata store starts within
  // the store tag's 16-bit RowOffset, but its lines reach RowOffset 65536 and beyond
  // (hub.rat.row_offset_bits = 20 allows it); the packets must still land every byte.
  // One token per GPU (16 such rows) takes the path; more would only lengthen the sanitizer run.
  const LayerSetup s({"model.hidden=32700", "model.ffn_hidden=64", "run.tokens=8", "systems.moehub.metadata_bytes=256B",
                      "hub.rat.row_offset_bits=20"},
                     true);
  for (const auto& o : s.run("mh-base,moehub", true)) {
    EXPECT_TRUE(o.functional_passed) << o.name << ": " << o.result.functional.dump();
  }
  // Rows whose metadata store itself starts beyond 16 bits are refused, naming the key.
  const LayerSetup too_wide({"model.hidden=32768", "model.ffn_hidden=64", "run.tokens=64", "hub.rat.row_offset_bits=20"}, true);
  EXPECT_THROW(too_wide.run("moehub", true), UserError);
}

TEST(MoeHubSystems, SixteenGpusShareTheEightRpmPartitions) {
  // 15 peers over 8 partitions: peers share partitions round-robin; the data still arrives whole.
  const LayerSetup s({"run.gpus=16", "model.experts=16"}, true);
  for (const auto& o : s.run("mh-pkt,moehub", true)) {
    EXPECT_TRUE(o.functional_passed) << o.name << ": " << o.result.functional.dump();
  }
}

TEST(MoeHubSystems, SmallDependencyTableGetsCoarserGroups) {
  // One table entry for a 256-row region (2 tiles): both tiles form one group, released by AllReady.
  const LayerSetup s({"hub.dam.table_entries=1"}, true);
  const auto out = s.run("moehub", true);
  EXPECT_TRUE(out[0].functional_passed) << out[0].result.functional.dump();
  EXPECT_EQ(hub(out[0])["gemm1_tiles_per_dam_group"].get<uint64_t>(), 2u);
}

// Dependency-driven dispatch by hand (paper IV-C2): a DAM over four M-tiles of 4 rows of 256 B
// releases the gated blocks of a one-SM GPU (one block at a time, 10 us each). The tiles fill
// in the order 2, 0, 3, 1 (one 1024 B ack each, at 2, 3, 4 and 5 us), so the blocks run in that
// order, not in block order, and the SM never idles while a ready tile waits: tile 2 starts at
// its Ready (2 us + 2 lookup cycles of 1 ns), each other one when the one before it ends.
TEST(DependencyDrivenDispatch, TilesReadyOutOfOrderStartInReadinessOrder) {
  Simulator sim;
  gpu::GpuConfig cfg = gpu::testing::h800();
  cfg.sm_count = 1;
  gpu::Gpu g(sim, cfg);
  std::vector<uint32_t> order;
  std::vector<int64_t> starts;
  gpu::KernelSpec k;
  k.name = "gemm1";
  k.blocks = 4;
  k.shape = {128, 0, 0, 1};
  k.program = std::make_shared<gpu::FunctionProgram>([&](gpu::BlockState& b) {
    if (b.step == 0) return gpu::Step::gate();
    if (b.step == 1) {
      order.push_back(b.block);
      starts.push_back(sim.now().ps());
      return gpu::Step::compute(Time::from_us(10));
    }
    return gpu::Step::done();
  });
  const gpu::KernelId id = g.create_kernel(std::move(k));
  DamConfig dc;
  dc.clock = Frequency::hertz(1000000000);
  dc.table_entries = 16;
  dc.counter_bits = 24;
  dc.global_counter_bits = 40;
  dc.lookup_cycles = 2;
  DataAvailabilityManager dam(sim, dc, [&](const DamSignal& s) {
    if (s.kind == DamSignalKind::Ready) g.release(id, s.group);
  });
  constexpr uint64_t kBase = 0x10000, kRow = 256;
  ASSERT_EQ(dam.add_tiling(ConsumerTiling{kBase, kRow, kRow, 4, 16, 0}), 4u);
  g.create_stream("experts").launch(id);
  const std::vector<uint64_t> fill{2, 0, 3, 1};
  for (size_t i = 0; i < fill.size(); ++i) {
    sim.schedule_at(Time::from_us(static_cast<int64_t>(2 + i)),
                    [&dam, tile = fill[i]] { dam.on_write_ack(kBase + tile * 4 * kRow, 4 * kRow); });
  }
  sim.run();
  EXPECT_EQ(order, (std::vector<uint32_t>{2, 0, 3, 1}));
  EXPECT_EQ(starts, (std::vector<int64_t>{2002000, 12002000, 22002000, 32002000}));
}

// Fig. 6's decomposition by hand: one GPU, one region of two M-tiles of 2 rows of 256 B, two
// N-tile blocks per M-tile. Rows 0-3 (LocalRowIDs 0-3) are issued at 1, 1, 2, 2 us and land at
// 4 (in two halves, at 3 and 4), 5, 6 and 8 us: producer (3 + 4 + 4 + 6) / 4 = 4.25 us; tile 0
// is complete at 5, tile 1 at 8: assembly (1 + 0 + 2 + 0) / 4 = 0.75 us. Tile 0's blocks poll:
// one on its SM since 2 us starts at 5.2 (signal 0.2, SM wait 0), one that got its SM at 7 starts
// at 7.1 (signal 0.1, SM wait 2); tile 1's are gated, released at 8.5, start at 9 and 10 (signal
// 0.5 each, SM wait 0.5 and 1.5). Per row: signal (2 x 0.15 + 2 x 0.5) / 4 = 0.325 us, SM wait
// (2 x 1 + 2 x 1) / 4 = 1 us.
TEST(DispatchTrace, SplitsARowsLatencyByHand) {
  DispatchTrace t;
  t.reset(4, 256, 2, 2, 1);
  t.add_regions(0, 1, 2);
  for (uint64_t row = 0; row < 4; ++row) t.issued(row, Time::from_us(row < 2 ? 1 : 2));
  t.landed(0, 0, 0, 0, 128, Time::from_us(3));
  t.landed(0, 0, 0, 0, 128, Time::from_us(4));
  t.landed(0, 0, 1, 1, 256, Time::from_us(5));
  t.landed(0, 0, 2, 2, 256, Time::from_us(6));
  t.landed(0, 0, 3, 3, 256, Time::from_us(8));
  t.all_arrived(0, Time::from_us(8));
  t.tile_started(0, 0, 0, Time::from_ns(5200), Time::from_us(2));
  t.tile_started(0, 0, 0, Time::from_ns(7100), Time::from_us(7));
  t.released(0, 0, 1, Time::from_ns(8500));
  t.tile_started(0, 0, 1, Time::from_us(9), std::nullopt);
  t.tile_started(0, 0, 1, Time::from_us(10), std::nullopt);
  t.polled(Time::from_us(1));
  t.computed(Time::from_us(3));
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["rows"].get<uint64_t>(), 4u);
  EXPECT_DOUBLE_EQ(j["producer_us"].get<double>(), 4.25);
  EXPECT_DOUBLE_EQ(j["tile_assembly_us"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["signal_us"].get<double>(), 0.325);
  EXPECT_DOUBLE_EQ(j["sm_wait_us"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["gemm1_polling_share"].get<double>(), 0.25);
  EXPECT_EQ(j["rows_in"][0].get<uint64_t>(), 4u);
  EXPECT_DOUBLE_EQ(j["last_row_landed_us"][0].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(j["mean_row_landed_us"][0].get<double>(), 5.75);
}

TEST(MoeHubSystems, RpmSendsFewerFullerPacketsForTheSameRows) {
  // An epilogue that writes half a line per instruction: without the RPM each half is a packet.
  std::vector<std::string> sets = small_layer();
  sets.push_back("systems.moehub.epilogue_transaction_bytes=64B");
  const LayerSetup s(sets, false);
  const auto out = s.run("mh-base,mh-pkt");
  const auto& base = hub(out[0]);
  const auto& pkt = hub(out[1]);
  EXPECT_EQ(base["egress"]["payload_bytes"], pkt["egress"]["payload_bytes"]);
  EXPECT_LT(pkt["packets"].get<uint64_t>(), base["packets"].get<uint64_t>());
  EXPECT_GT(pkt["mean_packet_fill"].get<double>(), base["mean_packet_fill"].get<double>());
  EXPECT_GT(pkt["rpm_merges"].get<uint64_t>(), 0u);
  EXPECT_EQ(base["rpm_merges"].get<uint64_t>(), 0u);
}

TEST(MoeHubSystems, DamRetiresTheTilesThatNeverGetRows) {
  const LayerSetup s(small_layer(), false);
  // Capacity: every token, 512 rows = 4 tiles of 128 per expert;
  // an expert with r rows fills ceil(r / 128) of them, the rest are retired at AllReady.
  uint64_t retired = 0, used = 0;
  for (int64_t e = 0; e < s.workload->model().experts(); ++e) {
    uint64_t rows = 0;
    for (int64_t src = 0; src < 8; ++src) rows += static_cast<uint64_t>(s.workload->plan().rows_to_expert(src, e));
    used += (rows + 127) / 128;
    retired += 4 - (rows + 127) / 128;
  }
  ASSERT_GT(retired, 0u);
  const auto out = s.run("moehub");
  const SystemOutcome& o = out.at(0);
  EXPECT_EQ(hub(o)["region_capacity_rows"].get<uint64_t>(), 512u);
  EXPECT_EQ(hub(o)["dam_retired_groups"].get<uint64_t>(), retired);
  // Every used tile is released (full or partial), and every scaling group too.
  EXPECT_GE(hub(o)["dam_releases"].get<uint64_t>(), used);
}

// A factor whose region exceeds every token is capped at every token, however large: the cap
// is taken before the product becomes an integer (1e30 x the mean used to wrap to 1 row).
TEST(MoeHubSystems, HugeCapacityFactorIsCappedAtEveryToken) {
  std::vector<std::string> sets = small_layer();
  sets.push_back("systems.moehub.capacity_factor=1e30");
  const LayerSetup s(sets, false);
  const auto out = s.run("moehub");
  EXPECT_EQ(hub(out.at(0))["region_capacity_rows"].get<uint64_t>(), 512u);
}

TEST(MoeHubSystems, RegionOverflowFailsTheRun) {
  std::vector<std::string> sets = small_layer();
  sets.push_back("systems.moehub.capacity_factor=0.5");
  const LayerSetup s(sets, false);
  try {
    s.run("moehub");
    FAIL() << "a region smaller than its rows must fail the run";
  } catch (const RowspError& e) {
    EXPECT_EQ(e.kind(), RowspErrorKind::RegionOverflow);
  }
}

TEST(MoeHubSystems, TimerBypassOffIsRefused) {
  const LayerSetup s({"run.tokens=512", "hub.rpm.timer_bypass=0ns"}, false);
  EXPECT_THROW(s.run("moehub"), UserError);
}

}  // namespace
}  // namespace moehub

namespace moehub {
namespace {

// A preset layer's hub sizing inputs: the resolved configuration (it refers to the registry)
// and its workload.
struct SizingSetup {
  ParamRegistry registry = build_param_registry();
  Config config;
  Workload workload;
  MoeHubParams params;
  HubConfig hub;

  explicit SizingSetup(std::vector<std::string> sets)
      : config(resolve(registry, std::move(sets))),
        workload(Workload::build(WorkloadConfig::from(config), ModelShape::from(config))),
        params(MoeHubParams::from(config)),
        hub(HubConfig::from(config)) {}
  static Config resolve(const ParamRegistry& registry, std::vector<std::string> sets) {
    const PresetCatalog catalog(MOEHUB_SOURCE_CONFIG_DIR);
    ConfigRequest req;
    req.assignments = std::move(sets);
    return build_config(catalog, registry, req);
  }
  HubSizing sizing() const { return HubSizing::of(params, hub, gpu::GpuConfig::from(config), workload); }
};

// The default DAM table holds one entry per GEMM1 M-tile for the paper's Qwen2-MoE point
// (docs/hub/ablation.md 11, D5), by hand: 8192 tokens on 8 GPUs, 8 local experts, each region holds every
// token (8192 rows = 64 M-tiles of 128): 8 x 64 = 512 entries, one tile per group. Half the table
// pairs the tiles: a tile would wait for its neighbour's rows.
TEST(HubSizing, QwenAt8192TokensGetsOneTilePerDamGroup) {
  SizingSetup s({"run.model=qwen2-moe-2.7b", "run.gpus=8", "run.tokens=8192"});
  EXPECT_EQ(s.hub.dam.table_entries, 512u);
  const HubSizing z = s.sizing();
  EXPECT_EQ(z.capacity, 8192u);
  EXPECT_EQ(z.tiles_m, 64u);
  EXPECT_EQ(z.tiles_per_group, 1u);
  EXPECT_EQ(z.groups_per_region, 64u);
  s.hub.dam.table_entries = 256;
  const HubSizing half = s.sizing();
  EXPECT_EQ(half.tiles_per_group, 2u);
  EXPECT_EQ(half.groups_per_region, 32u);
}

// The up-front capacity check, by hand: DeepSeek-V3 (hidden 7168: rows of 14336 B) on 16 GPUs
// at 65536 tokens: 16 local experts share the 512-entry DAM table, 32 entries each; a region
// holds every token (capacity_factor 0): 512 M-tiles of 128 rows, grouped 16 per DAM entry,
// so a group counts 2048 rows x 14336 B = 29360128 B: 25 bits.
TEST(HubSizing, DeepSeekV3NeedsATwentyFiveBitCounter) {
  SizingSetup s({"run.model=deepseek-v3", "run.gpus=16", "run.tokens=65536"});
  const HubSizing z = s.sizing();
  const MoeHubParams& p = s.params;
  const Workload& w = s.workload;
  HubConfig& hub = s.hub;
  EXPECT_EQ(z.row_bytes, 14336u);
  EXPECT_EQ(z.capacity, 65536u);
  EXPECT_EQ(z.tiles_m, 512u);
  EXPECT_EQ(z.tiles_per_group, 16u);
  EXPECT_EQ(z.groups_per_region, 32u);
  EXPECT_NO_THROW(z.check(p, hub, w, true));  // the default hub: 27 bits
  hub.dam.counter_bits = 24;
  try {
    z.check(p, hub, w, true);
    ADD_FAILURE() << "a 24-bit counter must be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "hub.dam.counter_bits: a GEMM1 DAM group of 29360128 B (2048 rows) needs 25 bits; the hub has 24 (set "
              "hub.dam.counter_bits >= 25)");
  }
  EXPECT_NO_THROW(z.check(p, hub, w, false));  // without the DAM (mh-base, mh-pkt) no counter is needed
  hub.aau.apt_entries = 8;
  EXPECT_THROW(z.check(p, hub, w, false), UserError);  // 16 live regions per GPU
}


// The internode path on 2 nodes x 2 GPUs (test::cluster_like: 50 GB/s NICs, 26 B headers,
// PCIe and NIC 300 ns each way, 50 ns cables, 150 ns switches; NVLink of h800_like) with a hub
// clock of 1 GHz. Each GPU's receiver unpacks messages as the hub's ingress does: a line for it
// lands (recorded), a line for another GPU of its node goes on through that GPU's relay.
struct InternodeBench {
  struct Landed {
    int gpu;
    int src;
    uint64_t row_id;
    Time at;
  };
  struct Receiver final : PacketReceiver {
    InternodeBench* b = nullptr;
    int gpu = 0;
    void deliver(Packet&& p) override {
      ASSERT_EQ(p.header, kLineMessageHeader);
      const LineMessage m = b->messages.take(static_cast<uint32_t>(p.cookie));
      for (const HubPacket& h : m.lines) {
        const int dst = static_cast<int>(h.malloc_id.gpu());
        if (dst == gpu) b->landed.push_back({gpu, m.src, h.row_id, b->sim.now()});
        else b->paths[static_cast<size_t>(gpu)]->forward(m.src, h, dst);
      }
    }
  };

  // flow_batch_bytes < 0: cluster_like as it is; else merged pair flows with those batches.
  explicit InternodeBench(InternodeConfig cfg, int flow_batch_bytes = -1) : net(batched(flow_batch_bytes), sim) {
    HubConfig hub;
    hub.clock = Frequency::hertz(1000000000);
    hub.rpm.entry_bytes = 128;
    hub.internode = cfg;
    for (int g = 0; g < 4; ++g) {
      paths.push_back(std::make_unique<InternodePath>(sim, net, hub, g, 2, messages, nullptr));
      receivers[g].b = this;
      receivers[g].gpu = g;
      net.set_receiver(g, &receivers[g]);
    }
  }
  static NetConfig batched(int flow_batch_bytes) {
    NetConfig c = test::cluster_like(4, 2);
    if (flow_batch_bytes < 0) return c;
    c.flow_merge_pairs = true;
    c.flow_batch_bytes = static_cast<uint32_t>(flow_batch_bytes);
    return c;
  }
  // A full 128 B line of row `row` for GPU `dst`.
  bool line(int src, int dst, uint64_t row) {
    HubPacket h;
    h.rowsp = true;
    h.malloc_id = MallocId::encode(static_cast<uint32_t>(dst), 0);
    h.row_id = row;
    h.valid_mask = ~0ULL >> 32;
    h.payload_bytes = 128;
    return paths[static_cast<size_t>(src)]->try_send(h, dst);
  }

  Simulator sim;
  FlowNetwork net;
  Slab<LineMessage> messages;
  std::vector<std::unique_ptr<InternodePath>> paths;
  Receiver receivers[4];
  std::vector<Landed> landed;
};

TEST(InternodePath, NicMergeSendsFullMessagesAtOnceAndTheRestAtTheTimeout) {
  InternodeConfig cfg;
  cfg.route = InternodeRoute::Nic;
  cfg.merge = true;
  cfg.message_bytes = 432;  // three lines of 128 B, each with its 16 B descriptor
  cfg.descriptor_bytes = 16;
  cfg.merge_timeout = Time::from_ns(500);
  InternodeBench b(cfg);
  for (uint64_t row = 0; row < 3; ++row) ASSERT_TRUE(b.line(0, 2, row));  // full: leaves at 0
  ASSERT_TRUE(b.line(0, 3, 7));                                            // alone: leaves at 500 ns
  b.sim.run();
  const InternodeCounters& n = b.paths[0]->counters();
  EXPECT_EQ(n.rdma_messages, 2u);
  EXPECT_EQ(n.rdma_lines, 4u);
  EXPECT_EQ(n.rdma_bytes, 432u + 144u);
  EXPECT_EQ(n.merge_timeouts, 1u);
  ASSERT_EQ(b.landed.size(), 4u);
  // 0 -> 2 (one leaf): 458 wire bytes at 50 GB/s = 9160 ps, then the last (only) packet's
  // 9160 ps, 2 x (300 + 300) ns, 2 cables, 1 switch: 1468320 ps; the three lines land together.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.landed[i].gpu, 2);
    EXPECT_EQ(b.landed[i].row_id, static_cast<uint64_t>(i));
    EXPECT_EQ(b.landed[i].at.ps(), 1468320);
  }
  // 0 -> 3 (rail 0 to rail 1, over a spine) from 500 ns: 170 B = 3400 ps twice, 1.2 us,
  // 4 cables, 3 switches: 500000 + 3400 + 3400 + 1200000 + 200000 + 450000.
  EXPECT_EQ(b.landed[3].gpu, 3);
  EXPECT_EQ(b.landed[3].at.ps(), 2356800);
}

TEST(InternodePath, RailSendsToTheSameRailGpuWhichForwardsOverNvlink) {
  InternodeConfig cfg;
  cfg.route = InternodeRoute::Rail;
  cfg.relay_cycles = 1;
  InternodeBench b(cfg);
  EXPECT_EQ(b.paths[0]->first_hop(3), 2);  // node 1, rail 0
  EXPECT_EQ(b.paths[1]->first_hop(2), 3);  // node 1, rail 1
  EXPECT_EQ(b.paths[0]->first_hop(1), 1);  // inside the node: NVLink
  ASSERT_TRUE(b.line(0, 3, 5));
  b.sim.run();
  EXPECT_EQ(b.paths[0]->counters().rdma_messages, 1u);
  EXPECT_EQ(b.paths[2]->counters().forwarded_lines, 1u);
  EXPECT_EQ(b.paths[2]->counters().rdma_messages, 0u);
  ASSERT_EQ(b.landed.size(), 1u);
  EXPECT_EQ(b.landed[0].gpu, 3);
  EXPECT_EQ(b.landed[0].src, 0);  // the producer, not the relay
  // RDMA 0 -> 2: 154 B = 3080 ps twice + 1.2 us + 2 cables + 1 switch = 1456160 ps; the relay's
  // next 1 GHz edge (1457000) + 1 cycle = 1458000; NVLink 2 -> 3: 144 wire bytes over 4 planes
  // (720 ps), the last packet on one plane (2880 ps), 2 x 250 ns + 100 ns switch.
  EXPECT_EQ(b.landed[0].at.ps(), 1458000 + 720 + 2880 + 600000);
  EXPECT_EQ(b.paths[2]->relay_peak_bytes(), 128u);
}

// net.flow_batch_bytes: the hub's lines to one GPU ride the pair's flow as batches. Four lines
// 0 -> 2 (one leaf) at 0: 154 wire bytes each at 50 GB/s, one leaves every 3080 ps; each then
// takes its last packet's 3080 ps, 2 x (300 + 300) ns, 2 cables and 1 switch (1453080 ps).
// Exact, line i lands at 3080 (i + 1) + 1453080; with 256 B batches line 0 (being served) alone,
// lines 1 and 2 together when 2 has arrived, line 3 alone.
TEST(InternodePath, FlowBatchLandsABatchsLinesAtOnce) {
  InternodeConfig cfg;
  cfg.route = InternodeRoute::Nic;
  for (const int batch : {0, 256}) {
    InternodeBench b(cfg, batch);
    for (uint64_t row = 0; row < 4; ++row) ASSERT_TRUE(b.line(0, 2, row));
    b.sim.run();
    ASSERT_EQ(b.landed.size(), 4u);
    const std::vector<int64_t> exact{1456160, 1459240, 1462320, 1465400};
    const std::vector<int64_t> batched{1456160, 1462320, 1462320, 1465400};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(b.landed[i].row_id, i);
      EXPECT_EQ(b.landed[i].at.ps(), (batch ? batched : exact)[i]) << batch << " B, line " << i;
    }
    EXPECT_EQ(b.paths[0]->counters().rdma_messages, 4u);  // each line still its own RDMA message
    EXPECT_EQ(b.net.stats()["rdma_messages"].get<uint64_t>(), 4u);
  }
}

// The verify layer at flow fidelity with batches of 4 KiB: the same rows land (verify passes), the
// DAM counts every line's bytes, and the network carries fewer flow members.
TEST(MoeHubSystems, FlowBatchesKeepEveryLineAndItsDamCount) {
  std::vector<std::string> sets{"net.fidelity=flow", "net.flow_merge_pairs=true"};
  const LayerSetup exact(sets, true);
  sets.emplace_back("net.flow_batch_bytes=4KiB");
  const LayerSetup batched(sets, true);
  const auto a = exact.run("moehub", true);
  const auto b = batched.run("moehub", true);
  EXPECT_TRUE(b.at(0).functional_passed) << b.at(0).result.functional.dump();
  EXPECT_GT(hub(b.at(0))["dam"]["counted_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(hub(a.at(0))["dam"]["counted_bytes"], hub(b.at(0))["dam"]["counted_bytes"]);
  EXPECT_EQ(hub(a.at(0))["egress"]["packets"], hub(b.at(0))["egress"]["packets"]);
  const auto flows = [](const SystemOutcome& o) { return o.result.network.at("flows_completed").get<uint64_t>(); };
  EXPECT_LT(flows(b.at(0)), flows(a.at(0)));
}

// hub.flow_batch_runs (a stated reduction): a batch's run of whole lines of one row lands as one
// write. The same rows land (verify passes), the DAM counts the same bytes, the hubs send the
// same packets and allocate the same rows, each once (one miss a row), and every run of two or
// more lines saves RAT accesses (fewer hits).
TEST(MoeHubSystems, FlowBatchRunsLandARunOfLinesAsOneWrite) {
  // 1 KiB rows (hidden 512 x 2 B): eight lines each, so a batch can carry runs.
  std::vector<std::string> sets{"net.fidelity=flow", "net.flow_merge_pairs=true", "net.flow_batch_bytes=4KiB",
                                "model.hidden=512", "model.ffn_hidden=256"};
  const LayerSetup lines(sets, true);
  sets.emplace_back("hub.flow_batch_runs=true");
  const LayerSetup runs(sets, true);
  const auto a = lines.run("moehub,mh-base", true);
  const auto b = runs.run("moehub,mh-base", true);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(b.at(i).functional_passed) << b.at(i).result.functional.dump();
    if (i == 0) EXPECT_EQ(hub(a.at(i))["dam"]["counted_bytes"], hub(b.at(i))["dam"]["counted_bytes"]);  // mh-base: no DAM
    EXPECT_EQ(hub(a.at(i))["egress"]["packets"], hub(b.at(i))["egress"]["packets"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["aau"]["rat_misses"], hub(b.at(i))["aau"]["rat_misses"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["aau"]["rows_allocated"], hub(b.at(i))["aau"]["rows_allocated"]) << b.at(i).name;
    EXPECT_LT(hub(b.at(i))["aau"]["rat_hits"].get<uint64_t>(), hub(a.at(i))["aau"]["rat_hits"].get<uint64_t>())
        << b.at(i).name;
  }
}

// hub.flow_line_runs (a stated reduction): a run of whole lines of one store is one RPM entry,
// one scheduling decision, one flow message and one write. The same rows land (verify passes),
// every counter counts the lines (RPM and egress packets and payload, RPM stores, DAM bytes, the
// same rows allocated), and the network carries fewer flow members.
TEST(MoeHubSystems, FlowLineRunsCountEveryLine) {
  // 1 KiB rows (hidden 512 x 2 B): eight lines each, so stores make runs of up to 1 KiB.
  std::vector<std::string> sets{"net.fidelity=flow", "net.flow_merge_pairs=true", "net.flow_batch_bytes=1KiB",
                                "model.hidden=512", "model.ffn_hidden=256", "hub.flow_batch_runs=true"};
  const LayerSetup lines(sets, true);
  sets.emplace_back("hub.flow_line_runs=true");
  const LayerSetup runs(sets, true);
  const auto a = lines.run("moehub,mh-base,mh-pkt", true);
  const auto b = runs.run("moehub,mh-base,mh-pkt", true);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  const auto flows = [](const SystemOutcome& o) { return o.result.network.at("flows_completed").get<uint64_t>(); };
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(b.at(i).functional_passed) << b.at(i).result.functional.dump();
    if (i == 0) EXPECT_EQ(hub(a.at(i))["dam"]["counted_bytes"], hub(b.at(i))["dam"]["counted_bytes"]);  // only moehub's DAM
    if (i != 1) {  // mh-base: no RPM
      EXPECT_EQ(hub(a.at(i))["rpm"]["packets"], hub(b.at(i))["rpm"]["packets"]) << b.at(i).name;
      EXPECT_EQ(hub(a.at(i))["rpm"]["payload_bytes"], hub(b.at(i))["rpm"]["payload_bytes"]) << b.at(i).name;
      EXPECT_EQ(hub(a.at(i))["rpm"]["stores"], hub(b.at(i))["rpm"]["stores"]) << b.at(i).name;
    }
    EXPECT_EQ(hub(a.at(i))["egress"]["packets"], hub(b.at(i))["egress"]["packets"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["egress"]["payload_bytes"], hub(b.at(i))["egress"]["payload_bytes"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["aau"]["rows_allocated"], hub(b.at(i))["aau"]["rows_allocated"]) << b.at(i).name;
    EXPECT_LT(flows(b.at(i)), flows(a.at(i))) << b.at(i).name;
  }
}

TEST(MoeHubSystems, FlowRunBytesMakeRunsLongerThanABatch) {
  // 2 KiB rows (hidden 1024 x 2 B), 1 KiB batches: runs of 1 KiB (the batch) or of 2 KiB
  // (hub.flow_run_bytes, a whole row) count the same lines, stores and DAM bytes, in fewer flows.
  std::vector<std::string> sets{"net.fidelity=flow",   "net.flow_merge_pairs=true", "net.flow_batch_bytes=1KiB",
                                "model.hidden=1024",   "model.ffn_hidden=256",      "hub.flow_batch_runs=true",
                                "hub.flow_line_runs=true"};
  const LayerSetup batch(sets, true);
  sets.emplace_back("hub.flow_run_bytes=2KiB");
  const LayerSetup rows(sets, true);
  const auto a = batch.run("moehub,mh-base", true);
  const auto b = rows.run("moehub,mh-base", true);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  const auto flows = [](const SystemOutcome& o) { return o.result.network.at("flows_completed").get<uint64_t>(); };
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(b.at(i).functional_passed) << b.at(i).result.functional.dump();
    EXPECT_EQ(hub(a.at(i))["egress"]["packets"], hub(b.at(i))["egress"]["packets"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["egress"]["payload_bytes"], hub(b.at(i))["egress"]["payload_bytes"]) << b.at(i).name;
    EXPECT_EQ(hub(a.at(i))["aau"]["rows_allocated"], hub(b.at(i))["aau"]["rows_allocated"]) << b.at(i).name;
    EXPECT_LT(flows(b.at(i)), flows(a.at(i))) << b.at(i).name;
  }
  EXPECT_EQ(hub(a.at(0))["rpm"]["packets"], hub(b.at(0))["rpm"]["packets"]);
  EXPECT_EQ(hub(a.at(0))["rpm"]["stores"], hub(b.at(0))["rpm"]["stores"]);
  EXPECT_EQ(hub(a.at(0))["dam"]["counted_bytes"], hub(b.at(0))["dam"]["counted_bytes"]);
}

}  // namespace
}  // namespace moehub
