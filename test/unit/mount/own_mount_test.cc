// The daemon's own mount, known by its mount id in /proc/self/mountinfo.
#include <gtest/gtest.h>

#include <string>

#include "mount/mount_watch.h"

namespace eventfs {
namespace {

TEST(Mountinfo, TheOwnMountIsKnownByItsIdNotItsPath) {
  const std::string mi =
      "41 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw\n"
      "90 22 0:55 / /mnt/my\\040events rw,nosuid - fuse.eventfs eventfs rw,user_id=0\n"
      "91 22 0:56 / /mnt/other rw - fuse.sshfs host: rw\n";
  OwnMount own;
  ASSERT_TRUE(OwnMount::find(mi, "/mnt/my events", own));
  EXPECT_EQ(own.id, 90);
  EXPECT_TRUE(own.present(mi));
  EXPECT_FALSE(own.covered(mi));
  EXPECT_FALSE(OwnMount::find(mi, "/mnt/other", own));
  EXPECT_FALSE(OwnMount::find(mi, "/sys/kernel/tracing", own));
  EXPECT_FALSE(OwnMount::find("", "/mnt/my events", own));

  // A second eventfs stacked on the first: the path finds the top one; the
  // first is covered, and each is present only while its own id is there.
  const std::string stacked = mi + "95 90 0:60 / /mnt/my\\040events rw - fuse.eventfs eventfs rw\n";
  OwnMount lower{90, "/mnt/my events"}, upper;
  ASSERT_TRUE(OwnMount::find(stacked, "/mnt/my events", upper));
  EXPECT_EQ(upper.id, 95);
  EXPECT_TRUE(lower.covered(stacked));
  EXPECT_FALSE(upper.covered(stacked));
  // The lower one lazily unmounted from under the upper one (umount -l takes the top).
  std::string upper_gone = stacked.substr(0, stacked.find("95 90"));
  EXPECT_TRUE(lower.present(upper_gone));
  EXPECT_FALSE(upper.present(upper_gone));
  EXPECT_FALSE(lower.covered(upper_gone));
}

}  // namespace
}  // namespace eventfs
