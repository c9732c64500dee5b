// The reader threads: a bounded number, whatever the CPU count, and every
// CPU's stream read by one of them; the packets' memory bounded likewise.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "recorder/cpu_recorder.h"
#include "recorder/reader_threads.h"
#include "recorder/stream_writer.h"
#include "record_bytes.h"
#include "support/temp_dirs.h"

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

// 20 CPUs whose streams are FIFOs: 8 threads read all of them.
TEST(RecordReaderThreads, EightThreadsReadEveryCpuOfTwenty) {
  constexpr int kCpus = 20, kRecords = 300;
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_EQ(::mkdir((dir / "per_cpu").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir / "out").c_str(), 0755), 0);
  std::vector<int> writers;
  struct CloseAll {
    std::vector<int>& fds;
    ~CloseAll() {
      for (int fd : fds) ::close(fd);
    }
  } close_all{writers};
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    const std::string d = dir / ("per_cpu/cpu" + std::to_string(cpu));
    ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
    ASSERT_EQ(::mkfifo((d + "/trace_pipe_raw").c_str(), 0600), 0);
    // Read-write: the FIFO has a writer, so an empty one reads EAGAIN, not 0.
    int fd = ::open((d + "/trace_pipe_raw").c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    writers.push_back(fd);
  }
  MountLayout layout;
  layout.mount = dir.path();
  Event e;
  e.name = "ev";
  e.id = 5;
  e.size = e.end = 8;
  layout.events.push_back(e);
  RecordControl control;
  std::vector<std::unique_ptr<CpuRecorder>> recorders;
  std::vector<CpuRecorder*> ptrs;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    recorders.push_back(std::make_unique<CpuRecorder>(layout, cpu, control));
    ASSERT_TRUE(recorders.back()->open(dir / "out"));
    ptrs.push_back(recorders.back().get());
  }
  ReaderThreads threads(ptrs, control);
  ASSERT_TRUE(threads.start());
  EXPECT_EQ(threads.threads(), ReaderThreads::kMaxThreads);
  for (int i = 0; i < kRecords; ++i) {
    for (int cpu = 0; cpu < kCpus; ++cpu) {
      std::vector<unsigned char> rec;
      add_event_record(rec, e.id, 100 + i, static_cast<std::uint64_t>(cpu));
      // A whole record per write (less than PIPE_BUF: never split); a full
      // FIFO waits for its reader.
      ssize_t n;
      while ((n = ::write(writers[cpu], rec.data(), rec.size())) < 0 && errno == EAGAIN) ::usleep(1000);
      ASSERT_EQ(n, static_cast<ssize_t>(rec.size()));
    }
  }
  control.phase = RecordControl::kDrain;
  threads.join();
  for (auto& r : recorders) {
    EXPECT_TRUE(r->finish());
    EXPECT_EQ(r->events(), static_cast<std::uint64_t>(kRecords)) << "cpu " << r->cpu();
    EXPECT_FALSE(r->stopped()) << "cpu " << r->cpu();
  }
}

}  // namespace
}  // namespace eventfs::recorder
