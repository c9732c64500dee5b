// The trace clock as a CTF clock: declared with its real frequency, or
// refused with one line when it has none that is known.
#include <gtest/gtest.h>

#include <string>

#include "recorder/mount_layout.h"
#include "recorder/trace_clock.h"
#include "recorder/tsdl.h"

namespace eventfs::recorder {
namespace {

TEST(RecordTraceClock, NanosecondClocksAt1GHz) {
  for (const char* c : {"local", "global", "perf", "mono", "mono_raw", "boot", "tai"}) {
    auto d = declare_clock(c, 100, "/m");
    ASSERT_TRUE(d) << c << ": " << d.error().reason;
    EXPECT_EQ(d->freq, 1000000000u) << c;
  }
}

TEST(RecordTraceClock, UptimeCountsUserHzTicks) {
  auto d = declare_clock("uptime", 100, "/m");
  ASSERT_TRUE(d) << d.error().reason;
  EXPECT_EQ(d->freq, 100u);
  auto other = declare_clock("uptime", 1024, "/m");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->freq, 1024u);
  EXPECT_FALSE(declare_clock("uptime", -1, "/m"));
}

TEST(RecordTraceClock, ClocksWithoutAKnownFrequencyAreRefusedInOneLine) {
  struct Case {
    const char* clock;
    const char* why;
  };
  for (const Case& c : {Case{"counter", "counts events, not time"}, Case{"x86-tsc", "counts CPU cycles"},
                        Case{"ppc-tb", "counts CPU cycles"}, Case{"jiffies", "not one eventfs-record knows"}}) {
    auto d = declare_clock(c.clock, 100, "/mnt/ev");
    ASSERT_FALSE(d) << c.clock;
    const std::string& m = d.error().reason;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + c.clock + "' of /mnt/ev"), std::string::npos) << m;
    EXPECT_NE(m.find(c.why), std::string::npos) << m;
    EXPECT_NE(m.find("/mnt/ev/trace_clock"), std::string::npos) << m;
  }
}

TEST(RecordTraceClock, TheMetadataDeclaresTheClocksFrequency) {
  MountLayout l;
  l.mount = "/m";
  l.clock = "uptime";
  l.clock_decl = *declare_clock("uptime", 100, "/m");
  const std::string meta = tsdl_metadata(l, "host", ClockOffset{1764700000, 42});
  EXPECT_NE(meta.find("clock {\n\tname = uptime;\n\tdescription = \"tracefs trace clock uptime\";\n\tfreq = 100;\n"
                      "\toffset_s = 1764700000;\n\toffset = 42;\n"),
            std::string::npos)
      << meta;
  EXPECT_EQ(meta.find("freq = 1000000000;"), std::string::npos) << meta;
  l.clock = "local";
  l.clock_decl = *declare_clock("local", 100, "/m");
  EXPECT_NE(tsdl_metadata(l, "host", {}).find("\tfreq = 1000000000;\n"), std::string::npos);
}

// The clock's zero in real time: the real time when the clock read
// `clock_now`, less that reading, in seconds and counts below a second.
TEST(RecordTraceClock, TheOffsetPutsTheClocksZeroInRealTime) {
  constexpr std::int64_t kReal = 1764759600123456789;  // 2025-12-03 11:00:00.123456789 UTC
  // A ns clock 3600.5 s after its zero.
  ClockOffset o = clock_offset(3600500000000ull, kReal, 1000000000);
  EXPECT_EQ(o.seconds, 1764755999);
  EXPECT_EQ(o.counts, 623456789u);
  // uptime at USER_HZ 100: 360050 counts is 3600.5 s.
  o = clock_offset(360050, kReal, 100);
  EXPECT_EQ(o.seconds, 1764755999);
  EXPECT_EQ(o.counts, 62u) << "623456789 ns at 100 counts a second";
  // tai runs 37 s ahead of the real time: its zero lies 37 s before the epoch.
  o = clock_offset(static_cast<std::uint64_t>(kReal) + 37000000000ull, kReal, 1000000000);
  EXPECT_EQ(o.seconds, -37);
  EXPECT_EQ(o.counts, 0u);
  o = clock_offset(static_cast<std::uint64_t>(kReal) + 36500000000ull, kReal, 1000000000);
  EXPECT_EQ(o.seconds, -37) << "floored: the counts are never negative";
  EXPECT_EQ(o.counts, 500000000u);
  EXPECT_EQ(clock_offset(5, kReal, 0).seconds, 0) << "no frequency, no offset";
}

}  // namespace
}  // namespace eventfs::recorder
