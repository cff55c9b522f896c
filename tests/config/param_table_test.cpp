// ParamTable: one descriptor declares a parameter and fills the struct member it names.

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "config/config.h"
#include "config/param_table.h"
#include "sim/error.h"
#include "systems/param_catalog.h"

namespace moehub {
namespace {

enum class Mode { Fast, Slow };
struct Inner {
  uint32_t count = 0;
};
struct Params {
  uint32_t entries = 0;
  int64_t size = 0;
  uint64_t bytes = 0;
  Time latency;
  Mode mode = Mode::Fast;
  Inner inner;
};

ParamTable<Params> table() {
  ParamTable<Params> t;
  t.integer("x.entries", &Params::entries, "entries").at_least(1);
  t.integer("x.size", &Params::size, "size").at_least(0).at_most(1000);
  t.bytes("x.bytes", &Params::bytes, "bytes").at_most(65536);
  t.time("x.latency", &Params::latency, "latency");
  t.choice("x.mode", &Params::mode, std::vector<std::pair<std::string, Mode>>{{"fast", Mode::Fast}, {"slow", Mode::Slow}},
           "mode");
  t.integer("x.inner", [](Params& p) -> uint32_t& { return p.inner.count; }, "nested").at_most(7);
  return t;
}

TEST(ParamTable, DeclaresEachParameterWithTheBoundOfTheFieldItFills) {
  ParamRegistry r;
  table().declare(r);
  const ParamSpec* entries = r.find("x.entries");
  ASSERT_NE(entries, nullptr);
  EXPECT_EQ(entries->type, ParamType::Integer);
  EXPECT_EQ(*entries->max, 4294967295.0);  // uint32_t
  EXPECT_EQ(*entries->min, 1.0);            // declared, above the field's 0
  EXPECT_EQ(*r.find("x.size")->max, 1000.0);
  EXPECT_EQ(*r.find("x.inner")->max, 7.0);  // declared, below the field's bound
  EXPECT_EQ(*r.find("x.inner")->min, 0.0);  // unsigned field
  EXPECT_EQ(r.find("x.mode")->choices, (std::vector<std::string>{"fast", "slow"}));
}

TEST(ParamTable, FillsEveryMemberIncludingNestedOnesAndEnums) {
  ParamRegistry r;
  table().declare(r);
  Config c(r);
  c.merge_text("[x]\nentries = 12\nsize = 5\nbytes = \"2KiB\"\nlatency = \"250ns\"\nmode = \"slow\"\ninner = 3\n", "t");
  c.resolve();
  Params p;
  table().read(c, p);
  EXPECT_EQ(p.entries, 12u);
  EXPECT_EQ(p.size, 5);
  EXPECT_EQ(p.bytes, 2048u);
  EXPECT_EQ(p.latency, Time::from_ps(250000));
  EXPECT_EQ(p.mode, Mode::Slow);
  EXPECT_EQ(p.inner.count, 3u);
}

TEST(ParamTable, AValueBeyondTheFieldIsTheUsersErrorNamingTheKey) {
  ParamRegistry r;
  table().declare(r);
  Config c(r);
  c.merge_text("[x]\nentries = 4294967296\nsize = 5\nbytes = 1\nlatency = \"1ns\"\nmode = \"fast\"\ninner = 3\n", "t");
  try {
    c.resolve();
    FAIL() << "resolved a value that does not fit a 32-bit field";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("must be at most 4294967295"), std::string::npos) << e.what();
    EXPECT_EQ(e.where(), "x.entries");
  }
}

TEST(ParamTable, ABoundLooserThanTheFieldIsABugInTheTable) {
  ParamTable<Params> t;
  t.integer("x.entries", &Params::entries, "entries").at_most(1e12);
  ParamRegistry r;
  EXPECT_THROW(t.declare(r), std::logic_error);
}

// Every number the simulator reads has an upper bound (issue 22): a count or size that could
// grow without limit would exhaust memory or wrap a product before any check saw it.
TEST(ParamTable, EveryNumericParameterOfTheSimulatorHasAnUpperBound) {
  const ParamRegistry r = build_param_registry();
  for (const ParamSpec& s : r.all()) {
    const bool numeric = s.type == ParamType::Integer || s.type == ParamType::Bytes || s.type == ParamType::Time ||
                         s.type == ParamType::IntegerList;
    if (numeric) {
      EXPECT_TRUE(s.max.has_value()) << s.path << " has no upper bound";
    }
  }
}

}  // namespace
}  // namespace moehub
