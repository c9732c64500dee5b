// On kernels with one global "rings expanded" flag (5.10, 6.1), the top
// level boots with one page per CPU and grows at the first use of tracing;
// resizing any instance sets the flag without growing it. eventfs's save
// instances are resized: the top level must still grow as the first use
// makes it, not stay at its boot size for the user's own tracing.
// Meaningful only on such a kernel fresh from boot (the kernel matrix runs
// it first in each VM); elsewhere it says why it has nothing to check.
#include <gtest/gtest.h>

#include "support/control_fixture.h"
#include "support/mounted_eventfs.h"
#include "support/stream_util.h"

namespace eventfs_it {
namespace {

using control::Accepts;
using stream::TopLevelRingsAsBefore;

constexpr const char* kTopBufferSizeFile = "/sys/kernel/tracing/buffer_size_kb";

TEST(FirstUse, ASavesResizedRingsLeaveTheTopLevelAsTheKernelsFirstUseDoes) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  const std::string before = slurp(kTopBufferSizeFile);
  if (before.find("(expanded: ") == std::string::npos)
    GTEST_SKIP() << "the top level's rings are expanded already (buffer_size_kb " << before
                 << "): nothing to check on this kernel now";
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "save:next=next_pid\n"));
  const std::string after = slurp(kTopBufferSizeFile);
  EXPECT_TRUE(TopLevelRingsAsBefore(before, after)) << "buffer_size_kb was " << before << ", is " << after;
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "!save:next=next_pid\n"));
  m.Stop();
}

}  // namespace
}  // namespace eventfs_it
