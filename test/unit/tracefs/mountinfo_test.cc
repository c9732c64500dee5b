// Finding tracefs in /proc/self/mountinfo.
#include <gtest/gtest.h>

#include <string>

#include "tracefs/locate.h"

namespace eventfs {
namespace {

TEST(Mountinfo, FindsTracefsAndPrefersTheCanonicalPlace) {
  const std::string mi =
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "40 22 0:12 / /mnt/my\\040trace rw - tracefs nodev rw\n"
      "41 22 0:12 / /sys/kernel/tracing rw,nosuid shared:5 - tracefs tracefs rw\n";
  EXPECT_EQ(tracefs_in_mountinfo(mi), "/sys/kernel/tracing");
  EXPECT_EQ(tracefs_in_mountinfo(mi.substr(0, mi.rfind("41 "))), "/mnt/my trace");
  EXPECT_EQ(tracefs_in_mountinfo("22 1 0:21 / /proc rw - proc proc rw\n"), "");
}

}  // namespace
}  // namespace eventfs
