#include <gtest/gtest.h>

#include "hub/rowsp.h"
#include "hub/rowsp_registry.h"
#include "hub_test_support.h"

namespace moehub {
namespace {

using test::FakeMemory;
using test::small_aau;

TEST(MallocId, EncodesGpuAndRegion) {
  const MallocId id = MallocId::encode(5, 513);
  EXPECT_EQ(id.gpu(), 5u);
  EXPECT_EQ(id.region(), 513u);
  EXPECT_EQ(id.bits(), (5u << 16) | 513u);
  EXPECT_EQ(MallocId::from_bits(id.bits()), id);
  EXPECT_THROW(MallocId::encode(1u << 16, 0), std::logic_error);
  EXPECT_THROW(MallocId::encode(0, 1u << 16), std::logic_error);
}

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest() : mem{sim, Time::from_ns(100), {}} {
    for (uint32_t g = 0; g < 2; ++g) hubs.push_back(std::make_unique<AddressAllocationUnit>(sim, small_aau(16), g, mem.access()));
    for (uint32_t g = 0; g < 2; ++g) reg.attach(g, *hubs[g]);
  }
  template <typename F>
  RowspErrorKind error_of(F&& f) {
    try {
      f();
    } catch (const RowspError& e) {
      return e.kind();
    }
    ADD_FAILURE() << "no RowspError";
    return RowspErrorKind::BadRegion;
  }

  Simulator sim;
  FakeMemory mem;
  std::vector<std::unique_ptr<AddressAllocationUnit>> hubs;
  RowspRegistry reg{2};
};

TEST_F(RegistryTest, MallocRegistersBaseAndRowSizeInTheTargetHub) {
  const MallocId a = reg.rowsp_malloc(1, 0x100000, 8192, 64);
  const MallocId b = reg.rowsp_malloc(1, 0x200000, 256, 8);
  EXPECT_EQ(a.gpu(), 1u);
  EXPECT_EQ(a.region(), 0u);
  EXPECT_EQ(b.region(), 1u);
  const AptRegion* r = hubs[1]->apt().find(a.region());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->base, 0x100000u);
  EXPECT_EQ(r->row_size, 8192u);
  EXPECT_EQ(r->capacity_rows, 64u);
  EXPECT_EQ(hubs[0]->apt().live(), 0u);
  EXPECT_EQ(reg.resolve_gpu(a), 1u);
  EXPECT_EQ(reg.resolve(RowspStore{a, 7, 8192 - 128, 128, false}), 1u);
}

TEST_F(RegistryTest, UnknownGpuIsADefinedError) {
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(2, 0, 128, 4); }), RowspErrorKind::UnknownGpu);
  EXPECT_EQ(error_of([&] { reg.resolve_gpu(MallocId::encode(7, 0)); }), RowspErrorKind::UnknownGpu);
  EXPECT_EQ(error_of([&] { reg.resolve(RowspStore{MallocId::encode(9, 0), 0, 0, 16, false}); }),
            RowspErrorKind::UnknownGpu);
  try {
    reg.resolve_gpu(MallocId::encode(7, 3));
  } catch (const UserError& e) {  // a UserError: exit status 2 with a reason naming the MallocID
    EXPECT_EQ(e.where(), "MallocID 0x70003");
    EXPECT_NE(e.reason().find("GPU 7"), std::string::npos);
  }
}

TEST_F(RegistryTest, UnallocatedRegionIsADefinedError) {
  EXPECT_EQ(error_of([&] { reg.resolve_gpu(MallocId::encode(1, 3)); }), RowspErrorKind::UnknownRegion);
  RowspStore s{MallocId::encode(0, 0), 0, 0, 16, false};
  EXPECT_EQ(error_of([&] { hubs[0]->arrive(s, [](const Placement&) {}); }), RowspErrorKind::UnknownRegion);
}

TEST_F(RegistryTest, RowOffsetBeyondTheRowIsADefinedError) {
  const MallocId id = reg.rowsp_malloc(0, 0, 256, 4);
  EXPECT_EQ(error_of([&] { reg.resolve(RowspStore{id, 0, 256, 4, false}); }), RowspErrorKind::OffsetBeyondRow);
  EXPECT_EQ(error_of([&] { reg.resolve(RowspStore{id, 0, 200, 64, false}); }), RowspErrorKind::OffsetBeyondRow);
  EXPECT_EQ(error_of([&] { hubs[0]->arrive(RowspStore{id, 0, 240, 32, false}, [](const Placement&) {}); }),
            RowspErrorKind::OffsetBeyondRow);
  EXPECT_NO_THROW(reg.resolve(RowspStore{id, 0, 192, 64, false}));
}

TEST_F(RegistryTest, BadRegionsAndAFullTableAreDefinedErrors) {
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(0, 0, 0, 4); }), RowspErrorKind::BadRegion);
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(0, 0, 128, 0); }), RowspErrorKind::BadRegion);
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(0, 0, 128, (1u << 20) + 1); }), RowspErrorKind::BadRegion);
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(0, 0, (1u << 16) + 1, 4); }), RowspErrorKind::BadRegion);
  for (int i = 0; i < 8; ++i) reg.rowsp_malloc(0, 0x1000 * i, 128, 4);
  EXPECT_EQ(error_of([&] { reg.rowsp_malloc(0, 0, 128, 4); }), RowspErrorKind::RegionTableFull);
}

TEST_F(RegistryTest, RowIdWiderThanTheFieldIsADefinedError) {
  const MallocId id = reg.rowsp_malloc(0, 0, 256, 4);
  EXPECT_EQ(error_of([&] { hubs[0]->arrive(RowspStore{id, uint64_t{1} << 32, 0, 16, false}, [](const Placement&) {}); }),
            RowspErrorKind::RowIdTooWide);
}

TEST_F(RegistryTest, FreeAndReinitFlushTheRegion) {
  const MallocId id = reg.rowsp_malloc(0, 0x1000, 256, 4);
  std::vector<Placement> got;
  auto record = [&](const Placement& p) { got.push_back(p); };
  hubs[0]->arrive(RowspStore{id, 40, 0, 16, false}, record);
  hubs[0]->arrive(RowspStore{id, 41, 0, 16, false}, record);
  sim.run();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].local_row_id, 1u);
  EXPECT_EQ(hubs[0]->rat().size(), 2u);

  reg.rowsp_reinit(id);  // next layer: RowPointer back to 0, cached mappings gone
  EXPECT_EQ(hubs[0]->rat().size(), 0u);
  hubs[0]->arrive(RowspStore{id, 41, 16, 16, false}, record);
  sim.run();
  EXPECT_EQ(got[2].local_row_id, 0u);
  EXPECT_EQ(got[2].address, 0x1000u + 16);

  reg.rowsp_free(id);
  EXPECT_EQ(hubs[0]->apt().live(), 0u);
  EXPECT_EQ(hubs[0]->rat().size(), 0u);
  EXPECT_THROW(reg.resolve_gpu(id), RowspError);
  EXPECT_EQ(reg.rowsp_malloc(0, 0x9000, 128, 2).region(), 0u);  // the entry is reused
}

}  // namespace
}  // namespace moehub
