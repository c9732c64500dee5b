// Shutdown: readers get end of file, a daemon takes away only its own mount
// (by its id: mounts stacked on one path), an instance someone holds is kept
// for the next daemon; and a start in the background exits 0 only when the
// mount is served.
#include <sys/mount.h>

#include <atomic>
#include <thread>

#include "support/mounted_eventfs.h"
#include "support/stream_util.h"

namespace eventfs_it {
namespace {

using stream::instance_dir;
using stream::wait_until;

// Reads a stream 64 bytes at a time, as `dd bs=64` does, until end of file
// or an error. A read the daemon never answers is left to the kernel: the
// thread is detached and keeps its own state.
class StreamReader {
 public:
  explicit StreamReader(const std::string& path) : st_(std::make_shared<State>()) {
    st_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    open_errno_ = st_->fd < 0 ? errno : 0;
    if (st_->fd >= 0) thread_ = std::thread([st = st_] { loop(*st); });
  }
  ~StreamReader() {
    if (!thread_.joinable()) return;
    if (st_->done) thread_.join();
    else thread_.detach();
  }
  int open_errno() const { return open_errno_; }
  bool done() const { return st_->done; }
  bool eof() const { return st_->eof; }
  int error() const { return st_->err; }
  long long bytes() const { return st_->bytes; }

 private:
  struct State {
    int fd = -1;
    std::atomic<bool> done{false}, eof{false};
    std::atomic<int> err{0};
    std::atomic<long long> bytes{0};
  };
  static void loop(State& st) {
    char buf[64];
    for (;;) {
      ssize_t n = ::read(st.fd, buf, sizeof buf);
      if (n > 0) {
        st.bytes += n;
        continue;
      }
      if (n == 0) st.eof = true;
      else st.err = errno;
      break;
    }
    ::close(st.fd);
    st.done = true;
  }
  std::shared_ptr<State> st_;
  int open_errno_ = 0;
  std::thread thread_;
};

std::vector<std::string> stream_paths(const MountedEventfs& m) {
  std::vector<std::string> paths = {m / "trace_pipe", m / "trace_pipe"};
  for (const auto& cpu : list_dir(m / "per_cpu", true)) paths.push_back(m / ("per_cpu/" + cpu + "/trace_pipe_raw"));
  return paths;
}

void ExpectEveryReaderGotEndOfFile(const std::vector<std::unique_ptr<StreamReader>>& readers,
                                   const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < readers.size(); ++i) {
    ASSERT_TRUE(wait_until([&] { return readers[i]->done(); }, 5s)) << paths[i] << ": the read never returned";
    EXPECT_TRUE(readers[i]->eof()) << paths[i] << ": " << std::strerror(readers[i]->error()) << " instead of end of file";
  }
}

// Readers in the middle of a stream of records (sched_switch is enabled, so
// every CPU has some) and readers waiting on an empty stream both end with
// read() == 0 at SIGTERM; the daemon exits 0 and takes its instance along.
class ShutdownReaders : public ::testing::TestWithParam<bool> {};

TEST_P(ShutdownReaders, SigtermGivesEveryReaderEndOfFile) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  const bool records_flowing = GetParam();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  if (records_flowing) {
    ASSERT_TRUE(stream::Writes(m / "sched_switch/enable", "1"));
  }
  auto paths = stream_paths(m);
  std::vector<std::unique_ptr<StreamReader>> readers;
  for (const auto& p : paths) {
    readers.push_back(std::make_unique<StreamReader>(p));
    ASSERT_EQ(readers.back()->open_errno(), 0) << p << ": " << std::strerror(readers.back()->open_errno());
  }
  if (records_flowing) {
    ASSERT_TRUE(wait_until([&] { return readers[0]->bytes() > 0; }, 5s)) << "no records on trace_pipe";
  } else {
    std::this_thread::sleep_for(300ms);  // the readers are parked by now
    for (std::size_t i = 0; i < readers.size(); ++i) EXPECT_FALSE(readers[i]->done()) << paths[i];
  }
  auto st = m.SignalAndWait(SIGTERM, 10s);
  ASSERT_TRUE(st.has_value()) << "no exit within 10 s of SIGTERM; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "wait status " << *st << "; stderr: " << m.Stderr();
  ExpectEveryReaderGotEndOfFile(readers, paths);
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_FALSE(exists(instance_dir(m.instance())));
}

INSTANTIATE_TEST_SUITE_P(Readers, ShutdownReaders, ::testing::Values(true, false),
                         [](const auto& i) { return std::string(i.param ? "Reading" : "Waiting"); });

// A process holding one of the instance's files makes the kernel keep the
// instance: the daemon says so, exits non-zero and keeps the ownership
// record, and the next daemon of that name reclaims the instance.
TEST(Shutdown, AnInstanceSomeoneHoldsIsLeftForTheNextDaemonToReclaim) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  std::string name;
  {
    MountedEventfs m;
    ASSERT_TRUE(m.Start());
    name = m.instance();
    const std::string inst = instance_dir(name);
    int held = ::open((inst + "/trace").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(held, 0) << std::strerror(errno);
    ASSERT_TRUE(stream::Writes(m / "sched_switch/enable", "1"));
    auto st = m.SignalAndWait(SIGTERM, 15s);
    ::close(held);
    ASSERT_TRUE(st.has_value()) << "no exit after SIGTERM; stderr: " << m.Stderr();
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) != 0) << "wait status " << *st;
    const std::string err = m.Stderr();
    EXPECT_NE(err.find("eventfs: cannot remove the tracefs instance " + inst + ": Device or resource busy"),
              std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    ASSERT_TRUE(exists(inst)) << "the kernel removed a held instance?";
    EXPECT_TRUE(exists("/run/eventfs/" + name + ".owner")) << "the ownership record went with the daemon";
    // Left cleared and disabled.
    EXPECT_EQ(slurp(inst + "/events/sched/sched_switch/enable"), "0\n");
  }
  MountOptions o;
  o.instance_name = name;
  MountedEventfs next(o);
  ASSERT_TRUE(next.Start()) << "the next daemon did not reclaim the instance";
  EXPECT_EQ(slurp(next / "sched_switch/format"), kGoldenSchedSwitch);
  next.Stop();
  EXPECT_FALSE(exists(instance_dir(name)));
  EXPECT_FALSE(exists("/run/eventfs/" + name + ".owner"));
}

// ---------------------------------------------------------------------------
// Two daemons mounted on one directory.

int eventfs_mounts_at(const std::string& path) {
  int n = 0;
  for (const auto& e : read_mountinfo()) n += e.mount_point == path && e.fstype == "fuse.eventfs";
  return n;
}

// A second daemon, in the foreground, mounted on top of `lower`.
class UpperDaemon {
 public:
  explicit UpperDaemon(const MountedEventfs& lower)
      : path_(lower.path()), instance_("eventfs-it-upper-" + std::to_string(::getpid())) {
    err_fd_ = make_capture_fd("upper-stderr");
    pid_ = spawn({kBinary, "-o", "instance=" + instance_, path_, "-f"}, err_fd_, err_fd_, "/");
    up_ = pid_ > 0 && wait_until([&] { return eventfs_mounts_at(path_) == 2; }, 5s);
  }
  ~UpperDaemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st;
      if (!wait_exit(pid_, 5s, st)) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
      }
    }
    remove_stale_instance(instance_dir(instance_), instance_);
    ::close(err_fd_);
  }
  bool up() const { return up_; }
  const std::string& instance() const { return instance_; }
  std::string Stderr() const { return read_capture(err_fd_); }
  std::optional<int> SignalAndWait(int sig, std::chrono::milliseconds limit) {
    if (sig) ::kill(pid_, sig);
    int st = 0;
    if (!wait_exit(pid_, limit, st)) return std::nullopt;
    pid_ = -1;
    return st;
  }

 private:
  std::string path_, instance_;
  int err_fd_ = -1;
  pid_t pid_ = -1;
  bool up_ = false;
};

TEST(StackedMounts, SigtermToTheUpperDaemonLeavesTheLowerMounted) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs lower;
  ASSERT_TRUE(lower.Start());
  UpperDaemon upper(lower);
  ASSERT_TRUE(upper.up()) << upper.Stderr();
  auto st = upper.SignalAndWait(SIGTERM, 10s);
  ASSERT_TRUE(st.has_value()) << upper.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << *st << " " << upper.Stderr();
  EXPECT_EQ(eventfs_mounts_at(lower.path()), 1);
  EXPECT_FALSE(exists(instance_dir(upper.instance())));
  // The lower daemon still serves its mount, and its instance is there.
  EXPECT_EQ(slurp(lower / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_TRUE(exists(instance_dir(lower.instance())));
  EXPECT_TRUE(process_alive(lower.pid()));
}

TEST(StackedMounts, LazyUnmountOfTheTopEndsOnlyItsDaemonAndItsReadersGetEndOfFile) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs lower;
  ASSERT_TRUE(lower.Start());
  UpperDaemon upper(lower);
  ASSERT_TRUE(upper.up()) << upper.Stderr();
  StreamReader waiting(lower / "trace_pipe");  // the path reaches the upper mount
  ASSERT_EQ(waiting.open_errno(), 0);
  std::this_thread::sleep_for(200ms);
  ASSERT_FALSE(waiting.done());
  ASSERT_EQ(::umount2(lower.path().c_str(), MNT_DETACH), 0) << std::strerror(errno);
  auto st = upper.SignalAndWait(0, 10s);
  ASSERT_TRUE(st.has_value()) << "the upper daemon did not notice its mount went; " << upper.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << *st << " " << upper.Stderr();
  ASSERT_TRUE(wait_until([&] { return waiting.done(); }, 5s)) << "the upper mount's reader still waits";
  EXPECT_TRUE(waiting.eof()) << std::strerror(waiting.error());
  EXPECT_FALSE(exists(instance_dir(upper.instance())));
  EXPECT_EQ(eventfs_mounts_at(lower.path()), 1);
  EXPECT_EQ(slurp(lower / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_TRUE(process_alive(lower.pid()));
}

TEST(StackedMounts, SigtermToTheCoveredDaemonLeavesTheUpperServing) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs lower;
  ASSERT_TRUE(lower.Start());
  UpperDaemon upper(lower);
  ASSERT_TRUE(upper.up()) << upper.Stderr();
  auto st = lower.SignalAndWait(SIGTERM, 10s);
  ASSERT_TRUE(st.has_value()) << lower.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << *st << " " << lower.Stderr();
  EXPECT_NE(lower.Stderr().find("another mount sits on this one"), std::string::npos) << lower.Stderr();
  EXPECT_FALSE(exists(instance_dir(lower.instance())));
  // The upper mount is untouched: still on top and served by its daemon.
  EXPECT_EQ(eventfs_mounts_at(lower.path()), 2);
  EXPECT_EQ(slurp(lower / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_TRUE(exists(instance_dir(upper.instance())));
  // Once the upper one goes, the lower (daemon-less) mount is what is left,
  // for the test's own clean-up to take away.
  auto ust = upper.SignalAndWait(SIGTERM, 10s);
  ASSERT_TRUE(ust.has_value());
  EXPECT_EQ(eventfs_mounts_at(lower.path()), 1);
}

// ---------------------------------------------------------------------------
// Background start.

TEST(BackgroundStart, MaxReadIsHonouredAndStatusZeroMeansServed) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountOptions o;
  o.foreground = false;
  o.args = {"-o", "max_read=8192"};
  MountedEventfs m(o);
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(m.launcher_status(), 0);
  ASSERT_TRUE(m.mounted_on_return());
  EXPECT_NE(mount_at(m.path())->options.find("max_read=8192"), std::string::npos);
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
}

}  // namespace
}  // namespace eventfs_it
