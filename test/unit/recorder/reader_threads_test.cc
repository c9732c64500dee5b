// The reader threads: a bounded number, whatever the CPU count, and every
// CPU's stream read by one of them; the packets' memory bounded likewise;
// the threads at the nice value they are given.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "recorder/cpu_recorder.h"
#include "recorder/read_pacing.h"
#include "recorder/reader_threads.h"
#include "recorder/stream_writer.h"
#include "record_bytes.h"
#include "support/temp_dirs.h"
#include "support/time_scale.h"

namespace eventfs::recorder {
namespace {

TEST(RecordReaderThreads, PacketsShrinkBeyond256CpusToStayWithin16MiB) {
  EXPECT_EQ(StreamWriter::packet_size_for(1), 64u * 1024);
  EXPECT_EQ(StreamWriter::packet_size_for(256), 64u * 1024);
  EXPECT_EQ(StreamWriter::packet_size_for(1024), 16u * 1024);
  EXPECT_EQ(StreamWriter::packet_size_for(4096), 4u * 1024);
  EXPECT_EQ(StreamWriter::packet_size_for(100000), 4u * 1024);  // but never below 4 KiB
  for (std::size_t cpus : {3u, 300u, 777u, 4096u}) {
    EXPECT_LE(StreamWriter::packet_size_for(cpus) * cpus, 16u * 1024 * 1024) << cpus;
    EXPECT_EQ(StreamWriter::packet_size_for(cpus) % 8, 0u) << cpus;
  }
}

// CPUs whose streams are FIFOs, each with a recorder writing into out/.
struct FifoCpus {
  eventfs_it::TempDir dir;
  std::vector<int> writers;
  MountLayout layout;
  Event e;
  RecordControl control;
  std::vector<std::unique_ptr<CpuRecorder>> recorders;
  std::vector<CpuRecorder*> ptrs;

  explicit FifoCpus(int cpus) {
    if (!dir.ok() || ::mkdir((dir / "per_cpu").c_str(), 0755) != 0 || ::mkdir((dir / "out").c_str(), 0755) != 0)
      return;
    layout.mount = dir.path();
    e.name = "ev";
    e.id = 5;
    e.size = e.end = 8;
    layout.events.push_back(e);
    for (int cpu = 0; cpu < cpus; ++cpu) {
      const std::string d = dir / ("per_cpu/cpu" + std::to_string(cpu));
      if (::mkdir(d.c_str(), 0755) != 0 || ::mkfifo((d + "/trace_pipe_raw").c_str(), 0600) != 0) return;
      // Read-write: the FIFO has a writer, so an empty one reads EAGAIN, not 0.
      int fd = ::open((d + "/trace_pipe_raw").c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) return;
      writers.push_back(fd);
      recorders.push_back(std::make_unique<CpuRecorder>(layout, cpu, control));
      if (!recorders.back()->open(ctf_sink(dir / "out", cpu))) return;
      ptrs.push_back(recorders.back().get());
    }
  }
  ~FifoCpus() {
    for (int fd : writers) ::close(fd);
  }
  bool ok(int cpus) const { return static_cast<int>(ptrs.size()) == cpus; }
};

// 20 CPUs: a thread for every 4 of them reads all of them.
TEST(RecordReaderThreads, FiveThreadsReadEveryCpuOfTwenty) {
  constexpr int kCpus = 20, kRecords = 300;
  FifoCpus f(kCpus);
  ASSERT_TRUE(f.ok(kCpus));
  ReaderThreads threads(f.ptrs, f.control);
  ASSERT_TRUE(threads.start());
  EXPECT_EQ(threads.threads(), 5u);
  for (int i = 0; i < kRecords; ++i) {
    for (int cpu = 0; cpu < kCpus; ++cpu) {
      std::vector<unsigned char> rec;
      add_event_record(rec, f.e.id, 100 + i, static_cast<std::uint64_t>(cpu));
      // A whole record per write (less than PIPE_BUF: never split); a full
      // FIFO waits for its reader.
      ssize_t n;
      while ((n = ::write(f.writers[cpu], rec.data(), rec.size())) < 0 && errno == EAGAIN) ::usleep(1000);
      ASSERT_EQ(n, static_cast<ssize_t>(rec.size()));
    }
  }
  f.control.phase = RecordControl::kDrain;
  threads.join();
  for (auto& r : f.recorders) {
    EXPECT_TRUE(r->finish());
    EXPECT_EQ(r->events(), static_cast<std::uint64_t>(kRecords)) << "cpu " << r->cpu();
    EXPECT_FALSE(r->stopped()) << "cpu " << r->cpu();
  }
}

// However many CPUs: kMaxThreads threads at most.
TEST(RecordReaderThreads, AtMostEightThreadsForFortyCpus) {
  constexpr int kCpus = 40;
  FifoCpus f(kCpus);
  ASSERT_TRUE(f.ok(kCpus));
  ReaderThreads threads(f.ptrs, f.control);
  ASSERT_TRUE(threads.start());
  EXPECT_EQ(threads.threads(), ReaderThreads::kMaxThreads);
  f.control.phase = RecordControl::kDrain;
  threads.join();
}

// Bytes written to FIFO `fd` and not yet read.
int unread(int fd) {
  int n = -1;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

// Once its streams are read empty, a thread lets a record that comes wait
// (ReadPacing: kMaxWait while no rate is known) before it reads it, and
// then reads it. The time from the write to the read has a floor and no
// ceiling (a loaded machine only makes it longer), so the floor is what is
// checked. A record can still be read at once if it comes just as the
// thread's poll(2) times out and it reads its streams anyway: a few records
// are tried, and one that waited is enough; without the pacing none waits.
TEST(RecordReaderThreads, ARecordThatComesWaitsForMoreBeforeItIsRead) {
  FifoCpus f(1);
  ASSERT_TRUE(f.ok(1));
  ReaderThreads threads(f.ptrs, f.control);
  ASSERT_TRUE(threads.start());
  constexpr int kTries = 3;
  int written = 0;
  std::vector<std::chrono::milliseconds> waited;
  for (int i = 0; i < kTries; ++i) {
    std::this_thread::sleep_for(eventfs_it::scaled(std::chrono::milliseconds(100)));  // read empty, polling
    std::vector<unsigned char> rec;
    add_event_record(rec, f.e.id, 100 + static_cast<std::uint64_t>(i), 0);
    const auto written_at = std::chrono::steady_clock::now();
    ASSERT_EQ(::write(f.writers[0], rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
    ++written;
    const auto limit = written_at + eventfs_it::scaled(std::chrono::milliseconds(10000));
    while (unread(f.writers[0]) != 0 && std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(unread(f.writers[0]), 0) << "never read";
    waited.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - written_at));
    if (waited.back() >= ReadPacing::kMaxWait) break;
  }
  std::string times;
  for (auto w : waited) times += " " + std::to_string(w.count()) + " ms";
  EXPECT_GE(waited.back(), ReadPacing::kMaxWait) << "each record was read sooner than the pacing's wait:" << times;
  f.control.phase = RecordControl::kDrain;
  threads.join();
  ASSERT_TRUE(f.recorders[0]->finish());
  EXPECT_EQ(f.recorders[0]->events(), static_cast<std::uint64_t>(written));
}

// The nice value of each of this process's threads, by thread id.
std::map<int, int> thread_nice_values() {
  std::map<int, int> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* ent = ::readdir(d)) {
    if (ent->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + ent->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    // After "(comm) ": state is field 3, nice field 19.
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    int nice = 0;
    for (int i = 3; i <= 19 && fields >> f; ++i)
      if (i == 19) nice = std::stoi(f);
    out[std::stoi(ent->d_name)] = nice;
  }
  ::closedir(d);
  return out;
}

// The threads take the nice value they are given before they read: one
// above the test's own, which anyone may set, or, for a test run at nice 19
// already, one below, which needs CAP_SYS_NICE.
TEST(RecordReaderThreads, TheThreadsRunAtTheirNiceValue) {
  constexpr int kCpus = 3;
  FifoCpus f(kCpus);
  ASSERT_TRUE(f.ok(kCpus));
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  const int wanted = own < 19 ? std::min(own + 5, 19) : 18;
  const auto before = thread_nice_values();
  ReaderThreads threads(f.ptrs, f.control, wanted);
  ASSERT_TRUE(threads.start());
  if (wanted < own && threads.nice_refused() != 0) {
    f.control.phase = RecordControl::kDrain;
    threads.join();
    GTEST_SKIP() << "run at nice 19 without CAP_SYS_NICE: no other nice value to give the threads";
  }
  EXPECT_EQ(threads.nice_refused(), 0);
  int at_wanted = 0;
  for (const auto& [tid, nice] : thread_nice_values())
    if (!before.count(tid) && nice == wanted) ++at_wanted;
  EXPECT_EQ(threads.threads(), 1u);  // (a thread for 4 CPUs)
  EXPECT_EQ(at_wanted, static_cast<int>(threads.threads()));
  EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), own) << "the caller's own nice value changed";
  f.control.phase = RecordControl::kDrain;
  threads.join();
}

}  // namespace
}  // namespace eventfs::recorder
