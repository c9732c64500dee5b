// Blocking reads of the streams: O_NONBLOCK, poll and epoll, signals (cat and a
// thread), twelve parked readers, shutdown and lazy unmount with parked readers.
// Needs root, FUSE and a live tracefs; the top-level instance is never touched.

#include <sys/epoll.h>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/children.h"
#include "support/sched_switch.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamBlocking : public StreamTest {};

TEST_F(StreamBlocking, ANonBlockingReadWithNothingEnabledFailsWithEagain) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  std::vector<std::string> rels = {"trace_pipe"};
  for (int c = 0; c < cpus; ++c) rels.push_back("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw");
  for (const auto& rel : rels) {
    int fd = ::open((m / rel).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0) << rel << ": " << std::strerror(errno);
    bool fd_ours = true;
    for (int attempt = 0; attempt < 2 && fd_ours; ++attempt) {  // before and after the rings are open
      ThreadedRead r(fd, EVENTFS_RECORD_MAX_SIZE);
      bool returned = r.Wait(500ms);
      EXPECT_TRUE(returned) << rel << " attempt " << attempt << ": a non-blocking read waited";
      // A read that waits is let go with data.
      fd_ours = r.Finish([&] { write_once(m / "sched_switch/enable", "1"); });
      if (!returned) break;
      EXPECT_EQ(r.n(), -1) << rel << " attempt " << attempt;
      EXPECT_EQ(r.err(), EAGAIN) << rel << " attempt " << attempt << ": " << std::strerror(r.err());
      std::this_thread::sleep_for(100ms);
    }
    if (fd_ours) ::close(fd);
    ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  }
}

struct PollCase {
  const char* name;
  bool epoll;
  Via via;
};

void PrintTo(const PollCase& c, std::ostream* os) { *os << c.name; }

class StreamPoll : public StreamTest, public ::testing::WithParamInterface<PollCase> {};

TEST_P(StreamPoll, TimesOutWithoutDataAndReportsPollinOnceAnEventComes) {
  const PollCase pc = GetParam();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string path =
      pc.via == Via::Text ? m / "trace_pipe" : m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  int ep = -1;
  if (pc.epoll) {
    ep = ::epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(ep, 0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0) << std::strerror(errno);
  }
  // Returns the poll result and its revents.
  auto wait_in = [&](int timeout_ms, unsigned& revents) {
    revents = 0;
    if (pc.epoll) {
      epoll_event evs[4];
      int r = ::epoll_wait(ep, evs, 4, timeout_ms);
      if (r > 0) revents = evs[0].events;
      return r;
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, timeout_ms);
    revents = static_cast<unsigned>(p.revents);
    return r;
  };

  unsigned revents = 0;
  auto t0 = Clock::now();
  int r = wait_in(200, revents);
  long waited = ms_since(t0);
  EXPECT_EQ(r, 0) << "revents " << revents << " with nothing enabled";
  EXPECT_GE(waited, 150) << "returned early";
  EXPECT_LT(waited, 1000) << "timed out late";

  // 300 ms into the next wait, another thread enables sched_switch and
  // makes context switches on the stream's CPU: the waiter must be woken by
  // the daemon's notification, not find the data on its first look.
  constexpr long kEnableAfterMs = 300;
  std::atomic<bool> stop{false};
  std::atomic<int> enable_error{-2};
  std::thread activity([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(kEnableAfterMs));
    enable_error = write_once(m / "sched_switch/enable", "1");
    while (!stop) {
      ping_pong(20, cpu, "efs-act-a", "efs-act-b");
      std::this_thread::sleep_for(20ms);
    }
  });
  t0 = Clock::now();
  r = wait_in(kEnableAfterMs + 2000, revents);
  waited = ms_since(t0);
  EXPECT_EQ(r, 1) << "no readiness within 2 s of enabling sched_switch";
  EXPECT_TRUE(revents & POLLIN) << "revents " << revents;
  EXPECT_GE(waited, kEnableAfterMs - 50) << "ready before anything was enabled";
  EXPECT_LT(waited, kEnableAfterMs + 2000);
  if (r == 1) {
    // What poll promised is there: a read (blocking, with events still
    // coming) returns the stream's data.
    std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
    ssize_t n = ::read(fd, buf.data(), buf.size());
    EXPECT_GT(n, 0) << std::strerror(errno);
    if (n > 0 && pc.via == Via::Text) {
      EXPECT_NE(std::string(buf.data(), static_cast<std::size_t>(n)).find(": sched_switch: prev_comm="),
                std::string::npos);
    } else if (n > 0) {
      eventfs_record_header h;
      EXPECT_GE(static_cast<std::size_t>(n), sizeof h);
      std::memcpy(&h, buf.data(), sizeof h);
      EXPECT_EQ(h.id, event_id(m, "sched_switch"));
    }
  }
  stop = true;
  activity.join();
  // (The write may return after the data it caused woke the waiter.)
  EXPECT_EQ(enable_error.load(), 0) << "enabling sched_switch failed; error_log: " << slurp(m / "error_log");
  EXPECT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  if (ep >= 0) ::close(ep);
  ::close(fd);
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamPoll,
                         ::testing::Values(PollCase{"Poll_TracePipe", false, Via::Text},
                                           PollCase{"Poll_PerCpuRaw", false, Via::Raw},
                                           PollCase{"Epoll_TracePipe", true, Via::Text},
                                           PollCase{"Epoll_PerCpuRaw", true, Via::Raw}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(StreamBlocking, ABlockedCatGetsTheRecordsOnceAnEventIsEnabled) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  Children kids;
  kids.SpawnCat(m / "trace_pipe");
  ASSERT_TRUE(kids.WaitAllInRead(3s)) << "cat never blocked in read(2): " << describe_status(kids.Status(0))
                                      << ", stderr: " << kids.Err(0);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(kids.Out(0), "") << "records with nothing enabled";
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  bool got = wait_until(
      [&] {
        ping_pong(10);
        return kids.Out(0).find(": sched_switch: prev_comm=") != std::string::npos;
      },
      3s);
  EXPECT_TRUE(got) << "cat printed: " << head_lines(kids.Out(0), 5);
  EXPECT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  kids.Signal(0, SIGINT);
  EXPECT_TRUE(kids.Wait(0, 2s)) << "cat did not end on SIGINT";
}

class StreamSignal : public StreamTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(StreamSignal, ABlockedCatEndsWithinASecondOfSigint) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string rel = GetParam();
  Children kids;
  kids.SpawnCat(m / rel);
  ASSERT_TRUE(kids.WaitAllInRead(3s)) << "cat never blocked in read(2): " << describe_status(kids.Status(0))
                                      << ", stderr: " << kids.Err(0);
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(kids.CountBlocked(), 1u) << "cat stopped waiting by itself: " << describe_status(kids.Status(0));
  auto t0 = Clock::now();
  kids.Signal(0, SIGINT);
  auto st = kids.Wait(0, 1s);
  ASSERT_TRUE(st) << "cat still blocked " << ms_since(t0) << " ms after SIGINT";
  EXPECT_TRUE(WIFSIGNALED(*st) && WTERMSIG(*st) == SIGINT) << describe_status(st);
  EXPECT_EQ(kids.Out(0), "");
  // The mount is unharmed.
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamSignal,
                         ::testing::Values("trace_pipe", "per_cpu/cpu0/trace_pipe_raw"),
                         [](const auto& info) {
                           return std::string(info.param) == "trace_pipe" ? "TracePipe" : "PerCpuRaw";
                         });

void noop_handler(int) {}

TEST_F(StreamBlocking, ABlockedReadFailsWithEintrWhenItsThreadTakesASignal) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  struct sigaction sa {}, old {};
  sa.sa_handler = noop_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART
  ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
  int fd = ::open((m / "trace_pipe").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  {
    ThreadedRead r(fd, 4096);
    bool blocked = wait_until([&] { return r.tid() != 0 && in_read_syscall(r.tid()); }, 3s);
    EXPECT_TRUE(blocked) << "the reader never blocked in read(2)";
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(r.done()) << "the read returned with nothing enabled: " << r.n();
    auto t0 = Clock::now();
    ::pthread_kill(r.handle(), SIGUSR1);
    bool ended = r.Wait(1s);
    EXPECT_TRUE(ended) << "the read was still waiting " << ms_since(t0) << " ms after the signal";
    if (ended) {
      EXPECT_EQ(r.n(), -1);
      EXPECT_EQ(r.err(), EINTR) << std::strerror(r.err());
    }
    // Data lets a read that ignored the signal go.
    if (!r.Finish([&] { write_once(m / "sched_switch/enable", "1"); })) fd = -1;
  }
  if (fd >= 0) ::close(fd);
  EXPECT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  ::sigaction(SIGUSR1, &old, nullptr);
}

TEST_F(StreamBlocking, TwelveParkedReadersLeaveTheRestOfTheMountResponsive) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  Children kids;
  for (int i = 0; i < 12; ++i) {
    if (i < 6)
      kids.SpawnCat(m / "trace_pipe");
    else
      kids.SpawnCat(m / ("per_cpu/cpu" + std::to_string(i % cpus) + "/trace_pipe_raw"));
  }
  ASSERT_TRUE(kids.WaitAllInRead(5s)) << kids.CountBlocked() << " of 12 readers blocked in read(2)";

  // The rest of the mount, from another thread so a stuck request cannot
  // hang the test.
  struct Ops {
    std::atomic<bool> done{false};
    std::mutex mu;
    std::vector<std::string> problems;
    void note(const std::string& p) {
      std::lock_guard lock(mu);
      if (problems.size() < 10) problems.push_back(p);
    }
  };
  auto ops = std::make_shared<Ops>();
  const std::string mnt = m.path();
  auto t0 = Clock::now();
  std::thread worker([ops, mnt] {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      if (int e = read_file(mnt + "/sched_switch/format", text)) ops->note(std::string("format: ") + std::strerror(e));
      else if (text != kGoldenSchedSwitch) ops->note("format: wrong text");
      // enable is generated on every read: each one reaches the daemon.
      if (int e = read_file(mnt + "/sched_switch/enable", text)) ops->note(std::string("enable: ") + std::strerror(e));
      else if (text != "0\n") ops->note("enable reads '" + text + "'");
    }
    for (int i = 0; i < 20; ++i) {
      if (int e = read_file(mnt + "/per_cpu/cpu0/stats", text)) ops->note(std::string("stats: ") + std::strerror(e));
      else if (text.find("reader: ") == std::string::npos) ops->note("stats: " + text);
      auto names = list_dir(mnt);
      if (std::find(names.begin(), names.end(), "sched_switch") == names.end() ||
          std::find(names.begin(), names.end(), "trace_pipe") == names.end())
        ops->note("ls of the root: " + join(names, " "));
    }
    // Writing 0 (it is already 0) leaves the readers without data.
    if (int e = write_once(mnt + "/sched_switch/enable", "0")) ops->note("write enable: " + errno_text(e));
    ops->done = true;
  });
  bool done = wait_until([&] { return ops->done.load(); }, 10s);
  long took = ms_since(t0);
  EXPECT_TRUE(done) << "the mount did not answer within 10 s while 12 readers were parked";
  EXPECT_LT(took, scaled(5000ms).count()) << "400 reads, 20 listings and a write took " << took << " ms";
  {
    std::lock_guard lock(ops->mu);
    EXPECT_TRUE(ops->problems.empty()) << join(ops->problems);
  }
  // They were parked all along (no data came), and still are.
  EXPECT_EQ(kids.CountBlocked(), 12u);
  for (std::size_t i = 0; i < kids.size(); ++i) EXPECT_EQ(kids.Out(i), "") << "reader " << i;
  auto k0 = Clock::now();
  EXPECT_TRUE(kids.KillAll(SIGKILL, 2s)) << "parked readers still there " << ms_since(k0) << " ms after SIGKILL";
  if (!done) {
    m.Stop();  // ends the daemon, which answers (or aborts) what the worker waits for
  }
  worker.join();
}

struct EndCase {
  const char* name;
  int signal;
};

void PrintTo(const EndCase& c, std::ostream* os) { *os << c.name; }

class StreamShutdown : public StreamTest, public ::testing::WithParamInterface<EndCase> {};

TEST_P(StreamShutdown, ParkedReadersReturnTheDaemonExitsAndTheInstanceIsRemoved) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_TRUE(m.is_child());
  const std::string inst = instance_dir(m.instance());
  ASSERT_TRUE(exists(inst));
  const int cpus = mount_cpus(m.path());
  Children kids;
  kids.SpawnCat(m / "trace_pipe");
  kids.SpawnCat(m / "trace_pipe");
  for (int c = 0; c < cpus; ++c) kids.SpawnCat(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
  ASSERT_TRUE(kids.WaitAllInRead(5s)) << kids.CountBlocked() << " of " << kids.size() << " readers blocked";
  std::this_thread::sleep_for(100ms);

  auto t0 = Clock::now();
  ASSERT_EQ(::kill(m.pid(), GetParam().signal), 0);
  bool all = wait_until(
      [&] {
        kids.Reap();
        for (std::size_t i = 0; i < kids.size(); ++i)
          if (!kids.Status(i)) return false;
        return true;
      },
      2s);
  long readers_ms = ms_since(t0);
  EXPECT_TRUE(all) << "readers still blocked " << readers_ms << " ms after " << strsignal(GetParam().signal);
  for (std::size_t i = 0; i < kids.size(); ++i) {
    auto st = kids.Status(i);
    // End of file or an error, but not killed by a signal.
    EXPECT_TRUE(st && WIFEXITED(*st)) << "reader " << i << ": " << describe_status(st) << "; stderr: " << kids.Err(i);
  }
  auto st = m.WaitExit(3s);
  ASSERT_TRUE(st) << "the daemon did not exit within 3 s; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << describe_status(st) << "; stderr: " << m.Stderr();
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_FALSE(exists(inst)) << "the instance outlived the daemon";
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamShutdown,
                         ::testing::Values(EndCase{"Sigterm", SIGTERM}, EndCase{"Sigint", SIGINT}),
                         [](const auto& info) { return std::string(info.param.name); });

// A lazy unmount (fusermount3 -u -z) with parked readers: the kernel keeps
// the detached mount alive while they hold their files, so the daemon
// learns nothing until they go (see the known bug below). Once they are
// killed, the daemon must end on its own, cleanly, and take its instance.
TEST_F(StreamBlocking, AfterALazyUnmountKilledParkedReadersLetTheDaemonEndAndRemoveItsInstance) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_TRUE(m.is_child());
  const std::string inst = instance_dir(m.instance());
  Children kids;
  kids.SpawnCat(m / "trace_pipe");
  kids.SpawnCat(m / "per_cpu/cpu0/trace_pipe_raw");
  ASSERT_TRUE(kids.WaitAllInRead(5s)) << kids.CountBlocked() << " of " << kids.size() << " readers blocked";
  RunResult u = run({"/usr/bin/fusermount3", "-u", "-z", m.path()}, 5s);
  ASSERT_EQ(u.exit_code(), 0) << u.describe();
  EXPECT_FALSE(mounted_at(m.path()));
  std::this_thread::sleep_for(200ms);
  auto t0 = Clock::now();
  EXPECT_TRUE(kids.KillAll(SIGKILL, 2s)) << "parked readers of a detached mount survived SIGKILL for "
                                         << ms_since(t0) << " ms";
  auto st = m.WaitExit(3s);
  ASSERT_TRUE(st) << "the daemon did not end within 3 s of its last reader; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << describe_status(st) << "; stderr: " << m.Stderr();
  EXPECT_FALSE(exists(inst)) << "the instance outlived the daemon";
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 4. The kernel's ring is drained only while someone reads.

}  // namespace
}  // namespace eventfs_it
