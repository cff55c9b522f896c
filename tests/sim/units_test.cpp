#include <gtest/gtest.h>

#include <string>

#include "sim/units.h"

namespace moehub {
namespace {

TEST(Units, ParsesTimes) {
  EXPECT_EQ(parse_time("250ns").ps(), 250000);
  EXPECT_EQ(parse_time("1us").ps(), 1000000);
  EXPECT_EQ(parse_time("0.5ns").ps(), 500);
  EXPECT_EQ(parse_time("3ps").ps(), 3);
  EXPECT_EQ(parse_time("2s").ps(), 2000000000000LL);
  EXPECT_EQ(parse_time(" 7 ms ").ps(), 7000000000LL);
}

TEST(Units, ParsesBandwidthFrequencyAndBytes) {
  EXPECT_EQ(parse_bandwidth("400GB/s").bytes_per_second(), 400000000000ULL);
  EXPECT_EQ(parse_bandwidth("3.35TB/s").bytes_per_second(), 3350000000000ULL);
  EXPECT_EQ(parse_bandwidth("1GiB/s").bytes_per_second(), 1073741824ULL);
  EXPECT_EQ(parse_frequency("1.98GHz").hertz(), 1980000000ULL);
  EXPECT_EQ(parse_frequency("1755MHz").hertz(), 1755000000ULL);
  EXPECT_EQ(parse_bytes("128B"), 128u);
  EXPECT_EQ(parse_bytes("128"), 128u);
  EXPECT_EQ(parse_bytes("80GiB"), 80ULL << 30);
  EXPECT_EQ(parse_bytes("4MB"), 4000000u);
}

TEST(Units, RejectsBadText) {
  EXPECT_THROW(parse_time("250"), UnitParseError);       // a unit is required
  EXPECT_THROW(parse_time("250 parsecs"), UnitParseError);
  EXPECT_THROW(parse_time("-1ns"), UnitParseError);
  EXPECT_THROW(parse_time("0.5ps"), UnitParseError);     // below the 1 ps resolution
  EXPECT_THROW(parse_time("ns"), UnitParseError);
  EXPECT_THROW(parse_bandwidth("400GB"), UnitParseError);
  EXPECT_THROW(parse_frequency("1.98"), UnitParseError);
  EXPECT_THROW(parse_bytes("1.5B"), UnitParseError);
  EXPECT_THROW(parse_time("99999999999999999999999s"), UnitParseError);
  // Found by fuzz_units: 40 decimal places made the divisor 10^40 wrap to 0 (division by zero).
  EXPECT_THROW(parse_time("." + std::string(40, '0')), UnitParseError);
  EXPECT_THROW(parse_bytes("1." + std::string(30, '0') + "B"), UnitParseError);
  EXPECT_EQ(parse_time("0.000000000001s").ps(), 1);  // 12 places: one picosecond
}

TEST(Units, FormatsExactly) {
  EXPECT_EQ(format_time(parse_time("250ns")), "250ns");
  EXPECT_EQ(format_time(parse_time("1500ps")), "1500ps");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("200GB/s")), "200GB/s");
  EXPECT_EQ(format_frequency(parse_frequency("1.98GHz")), "1980MHz");
  EXPECT_EQ(format_bytes(128), "128B");
}

TEST(Bandwidth, TransferTimeRoundsUpInIntegers) {
  // 144 B (a 128 B payload plus one 16 B header flit) at 25 GB/s: 144 / 25e9 s = 5.76 ns exactly.
  EXPECT_EQ(Bandwidth::bytes_per_second(25000000000ULL).transfer_time(144).ps(), 5760);
  // 1 B at 3 B/s = 333333333333.33 ps, rounded up.
  EXPECT_EQ(Bandwidth::bytes_per_second(3).transfer_time(1).ps(), 333333333334LL);
  // Large transfers do not overflow: 1 TB at 200 GB/s = 5 s.
  EXPECT_EQ(Bandwidth::bytes_per_second(200000000000ULL).transfer_time(1000000000000ULL).ps(), 5000000000000LL);
  EXPECT_EQ(Bandwidth::bytes_per_second(200).scaled(1, 4).bytes_per_second(), 50u);
}

TEST(Frequency, CyclesRoundUp) {
  // 1000 cycles at 1.98 GHz = 505050.50 ps -> 505051 ps.
  EXPECT_EQ(Frequency::hertz(1980000000ULL).cycles(1000).ps(), 505051);
  EXPECT_EQ(Frequency::hertz(1000000000ULL).cycles(7).ps(), 7000);
}

}  // namespace
}  // namespace moehub
