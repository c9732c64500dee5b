// Held enables (eventfs(5), "enable"): "hold" written through an open file
// enables the event for as long as that open file exists, whatever other
// users write meanwhile, and ends with it however its process ends. Checked
// in the mount's `enable` and in the instance's own file.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/control_fixture.h"

namespace eventfs_it {
namespace {

using namespace control;

class ControlHolds : public ControlTest {};

// An open of `path` holding its event (-1 if refused).
int hold(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (::write(fd, "hold\n", 5) != 5) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The first character of a file ("1" or "0"), the way `cut -c1` shows it.
std::string state_of(const std::string& path) { return slurp(path).substr(0, 1); }

// Waits (bounded) until the mount's and the instance's enable both read `want`:
// a released open reaches the daemon after close(2) has returned.
::testing::AssertionResult Settles(const std::string& mount_file, const std::string& kernel_file,
                                   const std::string& want) {
  if (stream::wait_until([&] { return state_of(mount_file) == want && state_of(kernel_file) == want; }, 5s))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << mount_file << " reads " << slurp(mount_file) << ", " << kernel_file
                                       << " reads " << slurp(kernel_file) << "; wanted " << want;
}

TEST_F(ControlHolds, AHoldLastsAsLongAsItsOpenFileWhateverOthersWrite) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string mine = m / "sched_switch/enable";
  const std::string kernel = instance_dir(m.instance()) + "/events/sched/sched_switch/enable";
  ASSERT_EQ(state_of(mine), "0");
  int fd = hold(mine);
  ASSERT_GE(fd, 0) << "hold refused: " << slurp(m / "error_log");
  EXPECT_EQ(slurp(mine), "1\n");
  EXPECT_EQ(state_of(kernel), "1");
  // Another user's enable and disable leave the hold in place.
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "1\n"));
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "0\n"));
  EXPECT_EQ(slurp(mine), "1\n");
  EXPECT_EQ(state_of(kernel), "1");
  // A second hold through the same open is the same hold.
  ASSERT_EQ(::write(fd, "hold", 4), 4);
  ::close(fd);
  EXPECT_TRUE(Settles(mine, kernel, "0"));
  EXPECT_EQ(slurp(m / "error_log"), "");
}

TEST_F(ControlHolds, EachHoldAndThePlainEnableCountApart) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string mine = m / "sched_switch/enable";
  const std::string kernel = instance_dir(m.instance()) + "/events/sched/sched_switch/enable";
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "1\n"));
  int a = hold(mine), b = hold(mine);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ::close(b);
  EXPECT_TRUE(Settles(mine, kernel, "1"));
  ::close(a);
  // Give the releases time to arrive: the plain enable must still hold it.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(slurp(mine), "1\n");
  EXPECT_EQ(state_of(kernel), "1");
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "0\n"));
  EXPECT_TRUE(Settles(mine, kernel, "0"));
}

TEST_F(ControlHolds, AHolderKilledWithSigkillReleasesItsHold) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string mine = m / "sched_wakeup/enable";
  const std::string kernel = instance_dir(m.instance()) + "/events/sched/sched_wakeup/enable";
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = hold(mine);
    char ok = fd >= 0 ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(ok, 'y');
  EXPECT_EQ(slurp(mine), "1\n");
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(Settles(mine, kernel, "0"));
}

TEST_F(ControlHolds, AHoldFromTheShellEndsWithItsEcho) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string kernel = instance_dir(m.instance()) + "/events/sched/sched_switch/enable";
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "hold\n"));
  EXPECT_TRUE(Settles(m / "sched_switch/enable", kernel, "0"));
}

TEST_F(ControlHolds, ARawEventCanBeHeld) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string mine = m / "raw/sched/sched_process_free/enable";
  const std::string kernel = instance_dir(m.instance()) + "/events/sched/sched_process_free/enable";
  int fd = hold(mine);
  ASSERT_GE(fd, 0) << slurp(m / "error_log");
  EXPECT_EQ(state_of(kernel), "1");
  EXPECT_EQ(state_of(mine), "1");
  ::close(fd);
  EXPECT_TRUE(Settles(mine, kernel, "0"));
}

TEST_F(ControlHolds, ABadValueNamesHold) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(write_once(m / "sched_switch/enable", "holdx\n"), EINVAL);
  EXPECT_NE(slurp(m / "error_log").find("hold to enable while open"), std::string::npos) << slurp(m / "error_log");
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
}

}  // namespace
}  // namespace eventfs_it
