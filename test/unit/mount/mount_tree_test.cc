// What the mount contains, built over a fixture kernel.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fs/node_tree.h"
#include "mount/mount_tree.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

TEST(MountTree, FixtureMountHasTheStableAndRawFiles) {
  eventfs::testing::ResolvedFixture fx("linux-2.6.36");
  NodeTree t;
  build_mount_tree(t, *fx.tracefs, fx.resolution, {});
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "sched_switch", a), 0);
  ASSERT_EQ(t.lookup(a.ino, "id", a), 0);
  std::unique_ptr<OpenFile> f;
  ASSERT_EQ(t.open(a.ino, O_RDONLY, f), 0);
  std::string out;
  ASSERT_EQ(f->read(0, 100, out), 0);
  EXPECT_EQ(out, "1\n");
  EXPECT_EQ(t.lookup(NodeTree::kRootIno, "sched_process_exec", a), ENOENT);
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "unavailable_events", a), 0);
  ASSERT_EQ(t.open(a.ino, O_RDONLY, f), 0);
  ASSERT_EQ(f->read(0, 4096, out), 0);
  EXPECT_EQ(out, "sched_process_exec: this kernel has no raw event sched:sched_process_exec\n");
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "raw", a), 0);
  ASSERT_EQ(t.lookup(a.ino, "sched", a), 0);
  ASSERT_EQ(t.lookup(a.ino, "sched_switch", a), 0);
  ASSERT_EQ(t.lookup(a.ino, "format", a), 0);
  EXPECT_GT(a.size, 100u);
}

}  // namespace
}  // namespace eventfs
