// KernelWriter: a refused kernel write's reason is the kernel's error_log
// entry where there is one, and error_log is emptied after it.
#include "control/kernel_writer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "support/fake_instance.h"

namespace eventfs {
namespace {

TEST(KernelWriter, ADoneWriteIsOk) {
  testing::FakeInstance files;
  KernelWriter w(files);
  EXPECT_TRUE(w.write("events/sched/sched_switch/enable", "1"));
  EXPECT_TRUE(files.enabled("events/sched/sched_switch"));
}

TEST(KernelWriter, ARefusalTheKernelLoggedCarriesItsReasonAndCaret) {
  testing::FakeInstance files;
  KernelWriter w(files);
  KernelStatus s = w.write("events/sched/sched_switch/filter", "prev_pid == 1 && bogus == 2");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, EINVAL);
  EXPECT_TRUE(s.error().logged);
  EXPECT_EQ(s.error().reason, "Field not found");
  EXPECT_EQ(s.error().caret, std::string("prev_pid == 1 && bogus == 2").find("bogus"));
  EXPECT_EQ(*files.read("error_log"), "") << "the kernel's entry was not taken out of its error_log";
}

TEST(KernelWriter, ARefusalWithoutAnEntryIsTheErrnosDescription) {
  testing::FakeInstance files;
  KernelWriter w(files);
  files.fail_next = ENOMEM;
  KernelStatus s = w.write("events/sched/sched_switch/enable", "1");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ENOMEM);
  EXPECT_FALSE(s.error().logged);
  EXPECT_EQ(s.error().reason, std::strerror(ENOMEM));
}

TEST(KernelWriter, APutBackLeavesTheKernelsErrorLogAlone) {
  testing::FakeInstance files;
  KernelWriter w(files);
  ASSERT_FALSE(w.write("events/sched/sched_switch/filter", "bogus", false));
  const std::string log = *files.read("error_log");
  EXPECT_NE(log, "") << "the fake kernel logs a bad filter";
  w.put_back("events/sched/sched_switch/filter", "bogus");
  EXPECT_EQ(*files.read("error_log"), log);
}

}  // namespace
}  // namespace eventfs
