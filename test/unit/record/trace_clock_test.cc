// The trace clock as a CTF clock: declared with its real frequency, or
// refused with one line when it has none that is known.
#include <gtest/gtest.h>

#include <string>

#include "record/mount_layout.h"
#include "record/trace_clock.h"
#include "record/tsdl.h"

namespace eventfs::record {
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
  const std::string meta = tsdl_metadata(l, "host");
  EXPECT_NE(meta.find("clock {\n\tname = uptime;\n\tdescription = \"tracefs trace clock uptime\";\n\tfreq = 100;\n"),
            std::string::npos)
      << meta;
  EXPECT_EQ(meta.find("freq = 1000000000;"), std::string::npos) << meta;
  l.clock = "local";
  l.clock_decl = *declare_clock("local", 100, "/m");
  EXPECT_NE(tsdl_metadata(l, "host").find("\tfreq = 1000000000;\n"), std::string::npos);
}

}  // namespace
}  // namespace eventfs::record
