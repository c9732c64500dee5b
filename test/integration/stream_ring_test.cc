// The kernel's ring is drained only while someone reads a stream; the readers'
// threads, their CPU and nice value; the queues' memory; idle streams; Needs root,
// FUSE and a live tracefs; the top-level instance is never touched. A CPU taken offline
// is an empty stream until it comes online, then its records come.

#include <sys/epoll.h>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "support/kernel_features.h"
#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/sched_switch.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamRing : public StreamTest {};

// trace_pipe lines of switches out of a ping-pong thread (and, with
// `into`, into one).
std::size_t switches_of(const std::vector<std::string>& lines, const PingPongResult& pp, bool into) {
  std::size_t n = 0;
  for (const auto& line : lines) {
    Switch s;
    if (parse_switch_line(line, s) &&
        (s.prev_pid == pp.ping || s.prev_pid == pp.pong || (into && (s.next_pid == pp.ping || s.next_pid == pp.pong))))
      ++n;
  }
  return n;
}

// Whether every CPU's stats say its ring is open (or, `open` false, closed).
bool every_ring(const MountedEventfs& m, int cpus, bool open) {
  for (int c = 0; c < cpus; ++c)
    if ((parse_stats(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")))["reader"] == "closed") == open)
      return false;
  return true;
}

TEST_F(StreamRing, IsLeftAloneWithoutReadersAndDrainedWhileOneReads) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const std::string inst = instance_dir(m.instance());
  const int cpu = test_cpu();
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  PingPongResult pp = ping_pong(300, cpu);
  ASSERT_EQ(pp.rounds_done, 300);
  std::this_thread::sleep_for(500ms);
  const long long before = kernel_unread_entries(inst, cpus);
  ASSERT_GE(before, 600) << "the kernel's unread entries with no stream open: eventfs consumed them";
  for (int c = 0; c < cpus; ++c) {
    std::string s = slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats"));
    EXPECT_EQ(stat_value(s, "read events"), 0) << s;
    EXPECT_EQ(parse_stats(s)["reader"], "closed") << s;
  }

  Collector col({m / "trace_pipe"}, false);
  ASSERT_TRUE(col.Start());
  // What was recorded before the open is delivered, not skipped.
  auto ours = [&] { return switches_of(col.Lines(), pp, true); };
  EXPECT_TRUE(wait_until([&] { return ours() >= 600; }, 5s)) << ours() << " switches of the ping-pong threads read";
  long long during = -1;
  bool drained = wait_until(
      [&] {
        during = kernel_unread_entries(inst, cpus);
        return during >= 0 && during < before / 2;
      },
      3s);
  EXPECT_TRUE(drained) << "unread entries " << during << " while reading (" << before << " before)";
  col.Stop();

  // Once the last reader is gone the ring is left alone again.
  EXPECT_TRUE(wait_until([&] { return every_ring(m, cpus, false); }, 3s))
      << "the rings stayed open after the stream was closed";
  const long long after_close = kernel_unread_entries(inst, cpus);
  pp = ping_pong(200, cpu);
  std::this_thread::sleep_for(200ms);
  const long long later = kernel_unread_entries(inst, cpus);
  EXPECT_GE(later - after_close, 400) << "unread entries " << after_close << " -> " << later
                                      << " across 200 round trips with no reader";

  // A second stream session reads them (the rings are opened again and
  // every CPU's drainer takes up its ring).
  Collector again({m / "trace_pipe"}, false);
  ASSERT_TRUE(again.Start());
  auto ours_again = [&] { return switches_of(again.Lines(), pp, false); };
  EXPECT_TRUE(wait_until([&] { return ours_again() >= 400; }, 5s))
      << ours_again() << " switches of the second ping-pong read in the second session";
  again.Stop();
  EXPECT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
}

// Voluntary context switches of the thread of `pid` named `name` (-1 if none).
long long voluntary_switches(pid_t pid, const std::string& name) {
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    if (slurp(t.path() / "comm") != name + "\n") continue;
    return stat_value(slurp(t.path() / "status"), "voluntary_ctxt_switches");
  }
  return -1;
}

// Each thread of process `pid` whose name starts with `prefix`, by name:
// its nice value and the CPUs it may run on (Cpus_allowed_list).
struct ThreadSched {
  int nice = 0;
  int rt_priority = 0;
  int policy = 0;  // SCHED_OTHER, SCHED_FIFO, ...
  std::string cpus;
};
std::map<std::string, ThreadSched> threads_of(pid_t pid, const std::string& prefix) {
  std::map<std::string, ThreadSched> out;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::string comm = slurp(t.path() / "comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (comm.rfind(prefix, 0) != 0) continue;
    // stat: pid (comm) state ppid ... field 19 is nice, 40 rt_priority, 41
    // policy; comm may hold spaces.
    std::string st = slurp(t.path() / "stat");
    std::istringstream rest(st.substr(st.rfind(')') + 2));
    std::vector<std::string> fields(3);
    for (std::string field; fields.size() <= 41 && rest >> field;) fields.push_back(field);
    ThreadSched& ts = out[comm];
    if (fields.size() <= 41) continue;
    ts.nice = std::stoi(fields[19]);
    ts.rt_priority = std::stoi(fields[40]);
    ts.policy = std::stoi(fields[41]);
    std::istringstream status(slurp(t.path() / "status"));
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Cpus_allowed_list:", 0) == 0) ts.cpus = line.substr(line.find_first_not_of(" \t", 18));
  }
  return out;
}

// The thread that reads CPU N's ring, and the one that answers its readers,
// run on CPU N (when the daemon may), 10 below the daemon's nice value, at
// -o nice=N, or SCHED_FIFO with -o rt=PRIO: floating at the daemon's own, in
// a storm keeping every CPU busy, they were delayed long enough for the
// kernel's ring to overrun.
TEST_F(StreamRing, ItsReadersRunOnTheirCpuTenBelowTheDaemonsNiceValueOrAtTheOption) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  for (const std::string& opt : {std::string(), std::string("nice=3"), std::string("rt=7")}) {
    SCOPED_TRACE(opt.empty() ? "default" : opt);
    const bool fifo = opt == "rt=7";
    MountedEventfs m(opt.empty() ? std::vector<std::string>{} : std::vector<std::string>{"-o", opt});
    ASSERT_TRUE(m.Start());
    const int cpus = mount_cpus(m.path());
    ASSERT_GT(cpus, 0);
    // The ring readers and, for each CPU, the thread that answers its readers.
    for (const char* prefix : {"eventfs-cpu", "eventfs-tell"}) {
      std::map<std::string, ThreadSched> per_cpu;
      EXPECT_TRUE(wait_until([&] { return static_cast<int>((per_cpu = threads_of(m.pid(), prefix)).size()) == cpus; }, 5s))
          << per_cpu.size() << " " << prefix << "N threads";
      auto all = threads_of(m.pid(), "eventfs");
      const ThreadSched own = all.at("eventfs");  // the main thread (and libfuse's)
      const int want = opt.empty() ? std::max(own.nice - 10, -20) : 3;
      for (int cpu = 0; cpu < cpus; ++cpu) {
        const std::string name = prefix + std::to_string(cpu);
        ASSERT_EQ(per_cpu.count(name), 1u) << name;
        if (fifo) {
          EXPECT_EQ(per_cpu[name].policy, SCHED_FIFO) << name;
          EXPECT_EQ(per_cpu[name].rt_priority, 7) << name;
        } else {
          EXPECT_EQ(per_cpu[name].policy, SCHED_OTHER) << name;
          EXPECT_EQ(per_cpu[name].nice, want) << name;
        }
        if (CPU_ISSET(cpu, &mine)) {
          EXPECT_EQ(per_cpu[name].cpus, std::to_string(cpu)) << name;
        }
      }
    }
    auto all = threads_of(m.pid(), "eventfs");
    const ThreadSched own = all.at("eventfs");
    EXPECT_EQ(all.at("eventfs-streams").nice, own.nice);
    EXPECT_EQ(all.at("eventfs-streams").policy, SCHED_OTHER);
    EXPECT_EQ(all.at("eventfs-streams").cpus, own.cpus);
  }
}

// A line of the daemon's /proc status (VmRSS, RssAnon), in bytes (-1 if
// it cannot be read).
long long status_bytes(pid_t pid, const std::string& key) {
  std::string s = slurp("/proc/" + std::to_string(pid) + "/status");
  auto at = s.find("\n" + key + ":");
  return at == std::string::npos ? -1 : std::stoll(s.substr(at + key.size() + 2)) * 1024;
}

// The memory CPU `cpu`'s queues hold, from its stats (-1: no such line).
long long queue_memory(const MountedEventfs& m, int cpu) {
  return stat_value(slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats")), "queue memory");
}

// What eventfs(8) says a CPU's queues hold at most while nothing waits in
// them (under -o queue_kb's default).
constexpr long long kIdleQueueBytes = 1 << 20;

// A daemon built with a sanitizer keeps memory of its own beside what the
// program touches (shadow memory, freed blocks held back), which its
// resident memory counts: there, only the queues' own count (stats) says
// what they hold.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The queues' memory is made when a stream session begins (their first
// parts) and freed a few seconds after it ended, except a queue that holds
// records for the next reader: those are all read then.
TEST_F(StreamRing, TheQueuesMemoryIsFreedAfterTheLastStreamClosedExceptWhereRecordsWait) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const unsigned id = event_id(m, "marker");
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  const std::string raw = m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  const std::string stats_path = m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats");
  auto open_cpus = [&] { return every_ring(m, cpus, true); };
  auto queues = [&] {
    long long sum = 0;
    for (int c = 0; c < cpus; ++c) sum += std::max(queue_memory(m, c), 0LL);
    return sum;
  };

  EXPECT_EQ(queue_memory(m, cpu), 0) << slurp(stats_path);
  int fd = ::open((m / "trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(wait_until(open_cpus, 5s)) << "the rings were not opened";
  EXPECT_GT(queue_memory(m, cpu), 0) << slurp(stats_path);
  ::close(fd);
  // (The queues' own count: their first parts, 648 KiB a CPU, are within
  // what the daemon's other allocations move its resident memory by, such
  // as a new FUSE worker's stack and heap; TheQueuesMemoryFollowsWhatWaitsInThem
  // checks the resident memory against megabytes of queued records.)
  EXPECT_TRUE(wait_until([&] { return queues() == 0; }, 10s)) << slurp(stats_path);

  // Records the last reader left in its CPU's queue outlive the release.
  ASSERT_TRUE(Writes(m / "marker/enable", "1", m / "error_log"));
  fd = ::open(raw.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(wait_until(open_cpus, 5s)) << "the rings were not opened again";
  constexpr int kMarkers = 200;
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.error, "");
  EXPECT_TRUE(wait_until([&] { return stat_value(slurp(stats_path), "read events") >= kMarkers; }, 5s))
      << slurp(stats_path);
  ::close(fd);
  std::this_thread::sleep_for(4s);  // the release comes 3 s after the close (RingSession::kReleaseAfterMs)
  EXPECT_GT(queue_memory(m, cpu), 0) << slurp(stats_path);
  Collector col({raw}, true);
  ASSERT_TRUE(col.Start());
  EXPECT_TRUE(col.WaitFor([&] { return col.Bytes() >= kMarkers * EVENTFS_RECORD_SIZE(64); }, 5s)) << col.Bytes();
  col.Stop();
  auto problems = col.Problems();
  EXPECT_TRUE(problems.empty()) << join(problems);
  auto [seq, marks, unknown_marks, lost_sum, odd] = parse_marker_stream(col, Via::Raw, id, cpu);
  EXPECT_TRUE(odd.empty()) << join(odd);
  EXPECT_EQ(marks, 0u);
  ASSERT_EQ(seq.size(), static_cast<std::size_t>(kMarkers)) << "markers kept in the queue across the release";
  for (int i = 0; i < kMarkers; ++i) EXPECT_EQ(seq[static_cast<std::size_t>(i)], i);
}

// An open stream with nothing waiting costs each CPU its queues' first
// parts, under kIdleQueueBytes (eventfs(8)); a queue grows as records wait
// in it, and gives the memory back to the system a few seconds after its
// reader took them, the stream still open.
TEST_F(StreamRing, TheQueuesMemoryFollowsWhatWaitsInThem) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  const std::string raw = m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  const std::string stats_path = m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats");
  // A kernel ring that holds every marker until eventfs queues it.
  ASSERT_TRUE(Writes(inst + "/buffer_size_kb", "16384"));
  ASSERT_TRUE(Writes(m / "marker/enable", "1", m / "error_log"));
  std::this_thread::sleep_for(300ms);
  const long long mounted = status_bytes(m.pid(), "RssAnon");
  ASSERT_GT(mounted, 0);

  int fd = ::open(raw.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(wait_until([&] { return every_ring(m, cpus, true); }, 5s)) << "the rings were not opened";
  std::this_thread::sleep_for(500ms);
  const long long idle = status_bytes(m.pid(), "RssAnon");
  if (!kSanitized) {
    // Besides the queues, an open stream starts threads (each CPU's drainer
    // and notifier; FUSE workers as they are needed), whose stacks and
    // malloc arenas take resident pages of their own. Queues made whole up
    // front would take 8 MiB a CPU.
    constexpr long long kThreadsBytes = 2 << 20;
    EXPECT_LE(idle - mounted, cpus * kIdleQueueBytes + kThreadsBytes) << "an idle open stream on " << cpus << " CPUs";
  }
  for (int c = 0; c < cpus; ++c) {
    EXPECT_LE(queue_memory(m, c), kIdleQueueBytes) << "CPU " << c;
    EXPECT_GE(queue_memory(m, c), 0) << "CPU " << c;
  }

  // 4 MB of records wait in the queue: it grows.
  constexpr int kMarkers = 50000;
  const long long bytes = kMarkers * static_cast<long long>(EVENTFS_RECORD_SIZE(64));
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.error, "");
  EXPECT_TRUE(wait_until([&] { return stat_value(slurp(stats_path), "entries") >= kMarkers; }, 10s))
      << slurp(stats_path);
  EXPECT_GE(queue_memory(m, cpu), bytes) << slurp(stats_path);
  const long long grown = status_bytes(m.pid(), "RssAnon");
  if (!kSanitized) {
    EXPECT_GE(grown - idle, bytes * 9 / 10) << "resident " << idle << " bytes idle, " << grown << " holding " << bytes;
  }

  // The reader takes them; the stream stays open, with nothing waiting.
  // (In reads of 64 KiB: a FUSE worker that answers a read with a copy
  // keeps a buffer of the read's size.)
  std::vector<char> buf(64 << 10);
  long long got = 0;
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) got += n;
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_GE(got, bytes);
  long long queue = -1;
  EXPECT_TRUE(wait_until([&] { return (queue = queue_memory(m, cpu)) >= 0 && queue <= kIdleQueueBytes; }, 10s))
      << queue << " bytes of queues a while after its records were read";
  if (!kSanitized) {
    // The count falls before the pages go back (CpuDrainer::trim gives them
    // back after it lets go of the queue's lock), so the resident memory is
    // waited for too: most of what the records took goes back, and what is
    // left is the queues' idle parts and the threads the stream and its
    // reads started (each FUSE worker libfuse adds keeps its stack and malloc
    // arena).
    const long long most = cpus * kIdleQueueBytes + (3 << 20);
    long long after = -1;
    EXPECT_TRUE(wait_until(
        [&] {
          after = status_bytes(m.pid(), "RssAnon");
          return after - mounted <= most && grown - after >= bytes * 3 / 4;
        },
        5s))
        << "resident " << mounted << " bytes mounted, " << idle << " idle, " << grown << " holding " << bytes
        << ", " << after << " once they were read; stats:\n"
        << slurp(stats_path);
  }
  ::close(fd);
}

// An open stream with nothing to read leaves its ring readers asleep: once
// their sweeps find nothing, they wait for the kernel to say a record was
// written on any CPU (the instance's trace_pipe, polled), or a second.
// Before, each woke every 10 ms (198 times in 2 s; 392 before that).
// Records that then come one at a time, on either CPU, each arrive, in
// every reader mode.
class StreamIdle : public StreamTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(StreamIdle, AnOpenStreamWithNothingToReadLeavesItsReadersAsleepAndEachLaterRecordComes) {
  MarkerMount mm({"-o", std::string("reader=") + GetParam()});
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  if (GetParam() == std::string("mmap") && !kernel_maps_rings()) {
    // Before Linux 6.10: the mount is made, its streams fail and say why.
    EXPECT_TRUE(MmapRefusedAsDocumented(m, m / "trace_pipe"));
    return;
  }
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  ASSERT_TRUE(Writes(m / "marker/enable", "1", m / "error_log"));
  Collector col({m / "trace_pipe"}, false);
  ASSERT_TRUE(col.Start());
  ASSERT_TRUE(wait_until([&] { return every_ring(m, cpus, true); }, 5s)) << "the rings were not opened";
  std::this_thread::sleep_for(300ms);  // (the sweeps find nothing: they stop)
  std::vector<long long> before;
  for (int c = 0; c < cpus; ++c) before.push_back(voluntary_switches(m.pid(), "eventfs-cpu" + std::to_string(c)));
  std::this_thread::sleep_for(2s);
  for (int c = 0; c < cpus; ++c) {
    const long long after = voluntary_switches(m.pid(), "eventfs-cpu" + std::to_string(c));
    ASSERT_GE(before[static_cast<std::size_t>(c)], 0) << "no thread eventfs-cpu" << c;
    EXPECT_LE(after - before[static_cast<std::size_t>(c)], 10)
        << "eventfs-cpu" << c << " woke " << after - before[static_cast<std::size_t>(c)]
        << " times in 2 s with nothing to read";
  }
  EXPECT_EQ(col.LineCount(), 0u);

  // One marker at a time, on each allowed CPU in turn, after a pause long
  // enough for the readers to stop sweeping again.
  const std::string marker = instance_dir(m.instance()) + "/trace_marker";
  long long slowest_ms = 0;
  constexpr int kMarkers = 12;
  for (int i = 0; i < kMarkers; ++i) {
    std::this_thread::sleep_for(60ms);
    const int cpu = allowed[static_cast<std::size_t>(i) % allowed.size()];
    const auto written = std::chrono::steady_clock::now();
    ASSERT_EQ(write_markers(marker, cpu, 1).error, "");
    ASSERT_TRUE(col.WaitFor([&] { return col.LineCount() >= static_cast<std::size_t>(i + 1); }, 5s))
        << "marker " << i << ", written on CPU " << cpu << ", did not come";
    slowest_ms = std::max<long long>(
        slowest_ms,
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - written).count());
  }
  RecordProperty("slowest_marker_ms", std::to_string(slowest_ms));  // (told, not judged)
  col.Stop();
  EXPECT_TRUE(col.Problems().empty()) << join(col.Problems());
  EXPECT_EQ(col.LineCount(), static_cast<std::size_t>(kMarkers));
  EXPECT_EQ(slurp(m / "error_log"), "");
}

// Where the instance's trace_pipe is open elsewhere (the kernel allows one
// open at a time), the readers look at their rings every 10 ms instead:
// records still come.
TEST_F(StreamRing, RecordsComeWhenTheInstancesTracePipeIsOpenElsewhere) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  ASSERT_TRUE(Writes(m / "marker/enable", "1", m / "error_log"));
  const std::string inst = instance_dir(m.instance());
  // (Closed before the unmount however the test ends: the kernel does not
  // remove an instance whose trace_pipe is open.)
  struct Held {
    int fd;
    ~Held() {
      if (fd >= 0) ::close(fd);
    }
  } held{::open((inst + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  ASSERT_GE(held.fd, 0) << inst << "/trace_pipe: " << std::strerror(errno);
  Collector col({m / "trace_pipe"}, false);
  ASSERT_TRUE(col.Start());
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(60ms);
    const int cpu = allowed[static_cast<std::size_t>(i) % allowed.size()];
    ASSERT_EQ(write_markers(inst + "/trace_marker", cpu, 1).error, "");
    EXPECT_TRUE(col.WaitFor([&] { return col.LineCount() >= static_cast<std::size_t>(i + 1); }, 5s))
        << "marker " << i << ", written on CPU " << cpu << ", did not come";
  }
  col.Stop();
  EXPECT_EQ(col.LineCount(), 6u);
  EXPECT_EQ(slurp(m / "error_log"), "");
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamIdle, ::testing::Values("auto", "mmap", "read"),
                         [](const auto& info) { return std::string(info.param); });

// tracefs has per_cpu/cpuN for every possible CPU, but the kernel has no
// ring for a CPU that has not been online since the instance was made
// (machines with room for hot-plugged CPUs have many). Its stream is empty
// and its reader idle, the other CPUs' streams work in every reader mode
// (with reader=mmap every stream failed with EIO; in read mode the CPU's
// reader woke about 900 times a second), and once the CPU comes online its
// ring is read, in the mode asked for, by threads on that CPU.
class StreamOfflineCpu : public StreamTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(StreamOfflineCpu, IsAnEmptyStreamUntilTheCpuComesOnlineThenItsRecordsCome) {
  const std::string mode = GetParam();
  const std::vector<int> allowed = allowed_cpus();
  const int cpu = test_cpu(), other = allowed.empty() ? 0 : allowed.front();
  if (cpu == other) GTEST_SKIP() << "needs two CPUs";
  CpuOffline offline(cpu);
  if (!offline.ok()) GTEST_SKIP() << "cannot take a CPU offline: " << offline.error();
  MarkerMount mm({"-o", "reader=" + mode});  // (its instance is made with the CPU offline)
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  ASSERT_GT(mount_cpus(m.path()), cpu);
  const unsigned id = event_id(m, "marker");
  const std::string inst = instance_dir(m.instance());
  auto cpu_path = [&](int c, const char* file) { return m / ("per_cpu/cpu" + std::to_string(c) + "/" + file); };
  auto reader_of = [&](int c) { return parse_stats(slurp(cpu_path(c, "stats")))["reader"]; };
  ASSERT_TRUE(Writes(m / "marker/enable", "1", m / "error_log"));
  Collector at_other({cpu_path(other, "trace_pipe_raw")}, true), at_cpu({cpu_path(cpu, "trace_pipe_raw")}, true);
  ASSERT_TRUE(at_other.Start());
  ASSERT_TRUE(at_cpu.Start());
  EXPECT_TRUE(wait_until([&] { return reader_of(cpu) == "offline"; }, 5s)) << slurp(cpu_path(cpu, "stats"));
  const std::string online_mode = reader_in_use(mode);
  EXPECT_EQ(reader_of(other), online_mode);

  constexpr int kMarkers = 300;
  MarkerWriteResult w = write_markers(inst + "/trace_marker", other, kMarkers);
  ASSERT_EQ(w.error, "");
  EXPECT_TRUE(at_other.WaitFor([&] { return at_other.RecordCount() >= kMarkers; }, 5s)) << at_other.RecordCount();

  // A reader with no ring looks for it once a second.
  const std::string drainer = "eventfs-cpu" + std::to_string(cpu);
  const long long before = voluntary_switches(m.pid(), drainer);
  std::this_thread::sleep_for(2s);
  const long long after = voluntary_switches(m.pid(), drainer);
  ASSERT_GE(before, 0) << "no thread " << drainer;
  EXPECT_LE(after - before, 10) << drainer << " woke " << after - before << " times in 2 s";

  ASSERT_TRUE(offline.Restore()) << "CPU " << cpu << " did not come online again";
  EXPECT_TRUE(wait_until([&] { return reader_of(cpu) == online_mode; }, 5s)) << slurp(cpu_path(cpu, "stats"));
  w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.error, "");
  EXPECT_TRUE(at_cpu.WaitFor([&] { return at_cpu.RecordCount() >= kMarkers; }, 5s)) << at_cpu.RecordCount();
  // Its ring's reader and notifier run there now.
  const std::string n = std::to_string(cpu);
  std::map<std::string, ThreadSched> threads;
  auto pinned = [&] {
    threads = threads_of(m.pid(), "eventfs-");
    return threads["eventfs-cpu" + n].cpus == n && threads["eventfs-tell" + n].cpus == n;
  };
  EXPECT_TRUE(wait_until(pinned, 3s)) << "eventfs-cpu" << n << " on " << threads["eventfs-cpu" + n].cpus
                                      << ", eventfs-tell" << n << " on " << threads["eventfs-tell" + n].cpus;
  at_cpu.Stop();
  at_other.Stop();
  for (auto* col : {&at_other, &at_cpu}) {
    const int of = col == &at_cpu ? cpu : other;
    SCOPED_TRACE("cpu" + std::to_string(of));
    auto problems = col->Problems();
    EXPECT_TRUE(problems.empty()) << join(problems);
    auto [seq, marks, unknown_marks, lost_sum, odd] = parse_marker_stream(*col, Via::Raw, id, of);
    EXPECT_TRUE(odd.empty()) << join(odd);
    EXPECT_EQ(marks, 0u);
    ASSERT_EQ(seq.size(), static_cast<std::size_t>(kMarkers));
    for (int i = 0; i < kMarkers; ++i) EXPECT_EQ(seq[static_cast<std::size_t>(i)], i);
  }

  // Offline and online again while a stream is open: the ring's reader,
  // woken while its CPU was gone, was let run anywhere by the kernel; at
  // the next session it goes back there.
  ASSERT_TRUE(wait_until([&] { return every_ring(m, mount_cpus(m.path()), false); }, 5s));
  {
    Collector during({cpu_path(cpu, "trace_pipe_raw")}, true);
    ASSERT_TRUE(during.Start());
    ASSERT_TRUE(wait_until([&] { return reader_of(cpu) == online_mode; }, 5s));
    CpuOffline again(cpu);
    ASSERT_TRUE(again.ok()) << again.error();
    std::this_thread::sleep_for(200ms);  // (the reader looks at its ring every 10 ms)
    ASSERT_TRUE(again.Restore());
  }
  ASSERT_TRUE(wait_until([&] { return every_ring(m, mount_cpus(m.path()), false); }, 5s));
  Collector next({cpu_path(cpu, "trace_pipe_raw")}, true);
  ASSERT_TRUE(next.Start());
  ASSERT_EQ(write_markers(inst + "/trace_marker", cpu, 10).error, "");
  EXPECT_TRUE(next.WaitFor([&] { return next.RecordCount() >= 10; }, 5s)) << next.RecordCount();
  EXPECT_TRUE(wait_until(pinned, 3s)) << "eventfs-cpu" << n << " on " << threads["eventfs-cpu" + n].cpus
                                      << ", eventfs-tell" << n << " on " << threads["eventfs-tell" + n].cpus;
  next.Stop();
  EXPECT_EQ(slurp(m / "error_log"), "");
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamOfflineCpu, ::testing::Values("auto", "mmap", "read"),
                         [](const auto& info) { return std::string(info.param); });

// ---------------------------------------------------------------------------
// 5. Lost events are never silent.

}  // namespace
}  // namespace eventfs_it
