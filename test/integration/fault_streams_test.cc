// Faults and concurrency on the real kernel (needs root, FUSE and a live
// tracefs; every mount has a tracefs instance of its own):
//
// Stream readers (cat of trace_pipe and per_cpu/cpuN/trace_pipe_raw) SIGKILLed
// mid-read while markers are written: the daemon serves on.
// Helpers: support/fault_fixture.h, support/fault_stream_load.h.

#include <sys/mman.h>
#include <time.h>
#include <iostream>
#include <new>
#include <random>
#include <string_view>


#include "support/fault_stream_load.h"
#include "support/stream_util.h"
#include "support/children.h"
#include "support/stream_reading.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace fault;

class FaultStreams : public FaultTest {};

TEST_F(FaultStreams, ReadersKilledMidReadLeaveTheDaemonServingTheNextReaders) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const unsigned id = static_cast<unsigned>(std::strtoul(slurp(m / "marker/id").c_str(), nullptr, 10));
  ASSERT_EQ(id, 1000u);
  std::mt19937 rng(seed_ ^ 0x5eedu);
  auto stream_path = [&] {
    if (rng() % 3 == 0) return m / "trace_pipe";
    return m / ("per_cpu/cpu" + std::to_string(rng() % static_cast<unsigned>(cpus)) + "/trace_pipe_raw");
  };

  MarkerWriter markers(inst + "/trace_marker", 0, 900000, 20, 1000us);
  long opened = 0, killed = 0, killed_in_read = 0, churn_opens = 0, churn_reads = 0;
  std::vector<std::string> problems;
  std::mutex mu;
  auto problem = [&](const std::string& p) {
    std::lock_guard lock(mu);
    if (problems.size() < 20) problems.push_back(p);
  };
  Children kids;
  for (int i = 0; i < 6; ++i, ++opened) kids.SpawnCat(stream_path());

  // Two threads open a stream, read it without waiting a few times, close it.
  std::atomic<bool> stop{false};
  std::atomic<long> opens{0}, reads{0};
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t) {
    std::vector<std::string> paths = {m / "trace_pipe"};
    for (int c = 0; c < cpus; ++c) paths.push_back(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
    churn.emplace_back([&, paths, t] {
      std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
      std::mt19937 r(seed_ + static_cast<unsigned>(t));
      while (!stop) {
        const std::string& p = paths[r() % paths.size()];
        int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
          problem("open " + p + ": " + errno_desc(errno));
          continue;
        }
        ++opens;
        for (int i = 0, n = 1 + static_cast<int>(r() % 3); i < n; ++i) {
          ++reads;
          if (::read(fd, buf.data(), buf.size()) < 0 && errno != EAGAIN)
            problem("read " + p + ": " + errno_desc(errno));
        }
        ::close(fd);
      }
    });
  }

  // For 3 s: now and then SIGKILL a reader, mostly inside read(2), and start another.
  const auto end = Clock::now() + 3s;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    kids.Reap();
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < kids.size(); ++i)
      if (!kids.Status(i)) live.push_back(i);
    if (live.empty()) break;
    std::size_t i = live[rng() % live.size()];
    if (in_read_syscall(kids.pid(i))) ++killed_in_read;
    kids.Signal(i, SIGKILL);
    ++killed;
    auto st = kids.Wait(i, 2s);
    if (!st) problem("a reader (" + std::to_string(kids.pid(i)) + ") survived SIGKILL for 2 s");
    kids.SpawnCat(stream_path());
    ++opened;
  }
  stop = true;
  for (auto& t : churn) t.join();
  churn_opens = opens;
  churn_reads = reads;
  // The rest: every reader still running, killed in its turn.
  kids.Reap();
  std::vector<std::string> ended_alone;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    if (auto st = kids.Status(i)) {
      if (!(WIFSIGNALED(*st) && WTERMSIG(*st) == SIGKILL))
        ended_alone.push_back("cat " + std::to_string(kids.pid(i)) + ": " + describe_status(st) +
                              "; stderr: " + kids.Err(i));
      continue;
    }
    if (in_read_syscall(kids.pid(i))) ++killed_in_read;
    ++killed;
  }
  EXPECT_TRUE(kids.KillAll(SIGKILL, 3s)) << "readers survived SIGKILL";
  markers.Stop();
  std::cout << "[fault] streams: readers started " << opened << ", SIGKILLed " << killed << " (" << killed_in_read
            << " of them inside read(2)); non-blocking opens " << churn_opens << " with " << churn_reads
            << " reads; markers written " << markers.written() << std::endl;
  Count("streams_opened", opened + churn_opens);
  Count("streams_killed", killed);
  Count("killed_in_read", killed_in_read);
  Count("markers", markers.written());
  EXPECT_EQ(markers.error(), "");
  EXPECT_TRUE(problems.empty()) << join(problems);
  EXPECT_TRUE(ended_alone.empty()) << "readers that ended before they were killed:\n" << join(ended_alone);
  EXPECT_GT(killed_in_read, 5) << "hardly a reader was killed inside read(2)";

  ASSERT_TRUE(process_alive(m.pid())) << "the daemon died; stderr: " << m.Stderr();
  ASSERT_TRUE(mounted_at(m.path()));
  // The killed readers' files were released: no ring is read any more.
  EXPECT_TRUE(wait_until([&] { return every_ring_closed(m, cpus); }, 5s))
      << "rings still open 5 s after the last reader was killed:" << ring_modes(m, cpus);

  // New readers get every new marker once, in order, whatever the old ones left queued.
  const int cpu = allowed_cpus().empty() ? 0 : allowed_cpus().back();
  for (bool binary : {false, true}) {
    const int lo = binary ? 910000 : 900000, hi = lo + 300;
    std::vector<std::string> paths;
    if (binary)
      for (int c = 0; c < cpus; ++c) paths.push_back(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
    else
      paths.push_back(m / "trace_pipe");
    Collector col(paths, binary);
    ASSERT_TRUE(col.Start());
    ASSERT_EQ(write_marker_range(inst + "/trace_marker", cpu, lo, hi), "");
    bool all = col.WaitFor([&] { return markers_in_range(col, binary, id, lo, hi).size() >= 300; }, 5s);
    col.WaitQuiet(200ms, 3s);
    col.Stop();
    auto got = markers_in_range(col, binary, id, lo, hi);
    std::vector<int> want(300);
    for (int i = 0; i < 300; ++i) want[static_cast<std::size_t>(i)] = lo + i;
    EXPECT_TRUE(all && got == want) << (binary ? "per_cpu raw: " : "trace_pipe: ") << describe_sequence(got, lo, hi);
    EXPECT_TRUE(col.Problems().empty()) << join(col.Problems());
  }
  // The control files still answer.
  EXPECT_EQ(write_once(m / "sched_switch/enable", "1\n"), 0);
  EXPECT_EQ(slurp(inst + "/events/sched/sched_switch/enable"), "1\n");
  EXPECT_EQ(write_once(m / "sched_switch/enable", "0\n"), 0);
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 5 and 6. The daemon stopped under load.

// A thread reading one stream with blocking read(2)s until one returns 0 or fails.

}  // namespace
}  // namespace eventfs_it
