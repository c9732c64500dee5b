// Lost events, the kernel's (a tiny ring) and eventfs's own (a reader that falls
// behind its queue), are reported in the stream and counted in stats. Needs root,
// FUSE and a live tracefs; the top-level instance is never touched.

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamLost : public StreamTest, public ::testing::WithParamInterface<MarkerCase> {};

TEST_P(StreamLost, AnOverwrittenRingGivesALostMarkInTheStreamAndCountsInStats) {
  const MarkerCase c = GetParam();
  MarkerMount mm({"-o", std::string("reader=") + c.reader});
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const unsigned id = event_id(m, "marker");
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  ASSERT_TRUE(ResizesRings(inst, "4"));
  constexpr int kMarkers = 5000;
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.error, "");
  ASSERT_EQ(w.written, kMarkers);
  const std::string kstats = slurp(inst + "/per_cpu/cpu" + std::to_string(cpu) + "/stats");
  const long long overrun = stat_value(kstats, "overrun");
  ASSERT_GT(overrun, 0) << "the kernel overwrote nothing: " << kstats;

  const std::string rel = c.via == Via::Text ? "trace_pipe" : "per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
  Collector col({m / rel}, c.via == Via::Raw);
  ASSERT_TRUE(col.Start());
  EXPECT_TRUE(col.WaitFor([&] { return col.Bytes() > 0; }, 3s));
  EXPECT_TRUE(col.WaitQuiet(300ms, 5s));
  const std::string stats = slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
  col.Stop();
  auto problems = col.Problems();
  EXPECT_TRUE(problems.empty()) << join(problems);

  auto [seq, marks, unknown_marks, lost_sum, odd] = parse_marker_stream(col, c.via, id, cpu);
  std::ostringstream ctx;
  ctx << seq.size() << " markers read, " << marks << " lost marks (" << unknown_marks << " without count) totalling "
      << lost_sum << "; kernel overrun " << overrun << "; eventfs stats:\n"
      << stats;
  EXPECT_TRUE(odd.empty()) << join(odd);
  EXPECT_GT(marks, 0u) << "events were lost but the stream does not say so; " << ctx.str();
  // What is left is the newest part, in order, each once.
  EXPECT_FALSE(seq.empty()) << ctx.str();
  EXPECT_LT(seq.size(), static_cast<std::size_t>(kMarkers)) << ctx.str();
  EXPECT_TRUE(std::is_sorted(seq.begin(), seq.end()) && std::adjacent_find(seq.begin(), seq.end()) == seq.end())
      << "markers out of order or repeated; " << ctx.str();
  if (!seq.empty()) {
    EXPECT_EQ(seq.back(), kMarkers - 1) << ctx.str();
  }
  // Nothing unaccounted for: what was read and what was reported lost make
  // up all that was written, and the loss is the kernel's overrun.
  EXPECT_EQ(seq.size() + lost_sum, static_cast<std::size_t>(kMarkers)) << ctx.str();
  EXPECT_EQ(static_cast<long long>(lost_sum), overrun) << ctx.str();
  // The stats say so too, with the same total as the stream.
  EXPECT_GT(stat_value(stats, "lost reports"), 0) << ctx.str();
  EXPECT_GT(stat_value(stats, "lost events"), 0) << ctx.str();
  EXPECT_EQ(stat_value(stats, "lost events"), static_cast<long long>(lost_sum)) << ctx.str();
  EXPECT_EQ(stat_value(stats, "lost reports"), static_cast<long long>(marks)) << ctx.str();
  EXPECT_EQ(parse_stats(stats)["reader"], c.reader) << ctx.str();
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamLost,
                         ::testing::Values(MarkerCase{Via::Text, "mmap"}, MarkerCase{Via::Text, "read"},
                                           MarkerCase{Via::Raw, "mmap"}, MarkerCase{Via::Raw, "read"}),
                         [](const auto& info) {
                           return std::string(info.param.via == Via::Text ? "TracePipe" : "PerCpuRaw") + "_" +
                                  info.param.reader;
                         });

// A reader that keeps a stream open but does not read: eventfs keeps
// draining the kernel into its own bounded queue (8 MiB a CPU, or
// -o queue_kb), drops the oldest records when it is full, and must say so
// at the place of the gap.
struct QueueOverflowCase {
  Via via;
  int queue_kb;  // 0: the default
};
class StreamQueueOverflow : public StreamTest, public ::testing::WithParamInterface<QueueOverflowCase> {};

TEST_P(StreamQueueOverflow, AReaderThatFellBehindIsToldHowManyRecordsWereDropped) {
  const Via via = GetParam().via;
  const std::size_t queue_bytes = GetParam().queue_kb ? std::size_t(GetParam().queue_kb) << 10 : std::size_t(8) << 20;
  // What a queue holds: a marker's record is a header and a char[64].
  const std::size_t holds = queue_bytes / (sizeof(eventfs_record_header) + 64);
  MarkerMount mm(GetParam().queue_kb ? std::vector<std::string>{"-o", "queue_kb=" + std::to_string(GetParam().queue_kb)}
                                     : std::vector<std::string>{});
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const unsigned id = event_id(m, "marker");
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  const std::string rel = via == Via::Text ? "trace_pipe" : "per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
  const std::string stats_path = m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats");
  // A kernel ring that holds every marker, so what eventfs drops is its own
  // doing even if its reader thread is slow to run.
  ASSERT_TRUE(ResizesRings(inst, "16384"));
  // Open, so eventfs drains the ring, but not read.
  int idle = ::open((m / rel).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(idle, 0) << std::strerror(errno);
  // More than eventfs's queue of a CPU holds (8 MiB: about 105k markers).
  const int kMarkers = static_cast<int>(holds * 3 / 2);
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  EXPECT_EQ(w.error, "");
  EXPECT_EQ(w.written, kMarkers);
  // Wait until eventfs has taken everything from the kernel.
  long long last = -1;
  bool settled = wait_until(
      [&] {
        long long now = stat_value(slurp(stats_path), "read events") + stat_value(slurp(stats_path), "lost events");
        bool same = now == last && now > 0;
        last = now;
        if (!same) std::this_thread::sleep_for(100ms);
        return same;
      },
      10s);
  EXPECT_TRUE(settled) << slurp(stats_path);
  const std::string before = slurp(stats_path);
  ASSERT_GT(stat_value(before, "dropped by eventfs"), 0) << "eventfs's queue never overflowed: " << before;

  Collector col({m / rel}, via == Via::Raw);
  ASSERT_TRUE(col.Start());
  EXPECT_TRUE(col.WaitFor([&] { return col.Bytes() > 0; }, 3s));
  EXPECT_TRUE(col.WaitQuiet(300ms, 10s));
  const std::string stats = slurp(stats_path);
  col.Stop();
  ::close(idle);
  auto problems = col.Problems();
  EXPECT_TRUE(problems.empty()) << join(problems);

  auto [seq, marks, unknown_marks, lost_sum, odd] = parse_marker_stream(col, via, id, cpu);
  const std::size_t received = seq.size();
  const int newest = seq.empty() ? -1 : seq.back();
  const bool ordered = std::adjacent_find(seq.begin(), seq.end(), std::greater_equal<int>()) == seq.end();
  std::ostringstream ctx;
  ctx << received << " markers read, " << marks << " lost marks totalling " << lost_sum << "; eventfs stats:\n" << stats;
  EXPECT_TRUE(odd.empty()) << join(odd);
  EXPECT_GT(marks, 0u) << "eventfs dropped records without saying so; " << ctx.str();
  EXPECT_TRUE(ordered) << "markers out of order or repeated; " << ctx.str();
  EXPECT_EQ(newest, kMarkers - 1) << "the newest marker is not the last one read; " << ctx.str();
  EXPECT_EQ(received + lost_sum, static_cast<std::size_t>(kMarkers)) << ctx.str();
  // The queue held what its size says, no more, and not much less.
  EXPECT_LE(received, holds) << ctx.str();
  EXPECT_GE(received, holds * 9 / 10) << ctx.str();
  EXPECT_EQ(static_cast<std::uint64_t>(stat_value(stats, "dropped by eventfs") + stat_value(stats, "lost events")),
            lost_sum)
      << ctx.str();
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamQueueOverflow,
                         ::testing::Values(QueueOverflowCase{Via::Text, 0}, QueueOverflowCase{Via::Raw, 0},
                                           QueueOverflowCase{Via::Raw, 256}),
                         [](const auto& info) {
                           return std::string(info.param.via == Via::Text ? "TracePipe" : "PerCpuRaw") +
                                  (info.param.queue_kb ? "_QueueKb" + std::to_string(info.param.queue_kb) : "");
                         });

// One slow reader during a marker storm (issue 23 item 3): reads of 1 MiB
// with 20 ms between them. The storm's rate steps through the reader's own
// (in stable bytes a second, 40 to 65 MB/s, 0.7 s each, then 0.3 s as fast
// as it can), so
// that eventfs's queue overflows between reads at times, and at times is
// full while a lease of the reader's is out. Every gap carries one lost-events record, right
// there, with the exact count; with two stable events over the marker's
// raw event too (two records a marker, both counted). The kernel's ring
// holds the whole storm, so the loss is eventfs's own.
class StreamLostPlacement : public StreamTest, public ::testing::WithParamInterface<int> {};

// "lm-<n>" -> n; -1 otherwise.
long long lost_marker_number(const char* text, std::size_t n) {
  if (n < 4 || std::memcmp(text, "lm-", 3) != 0) return -1;
  long long v = 0;
  std::size_t i = 3;
  for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) v = v * 10 + (text[i] - '0');
  return i > 3 && (i == n || text[i] == '\n') ? v : -1;
}

TEST_P(StreamLostPlacement, ASlowReaderIsToldOfEachGapWhereItIs) {
  const int projections = GetParam();
  TempDir dir;
  std::string catalog = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  ASSERT_NE(catalog.rfind("<read", 0), 0u) << catalog;
  for (int i = 0; i < projections; ++i)
    catalog += "STABLE_EVENT(lost_marker" + std::to_string(i) + ", ftrace:print, id=" + std::to_string(1000 + i) +
               ",\n\t__array(char, text, 64) = buf\n)\n";
  ASSERT_TRUE(write_text_file(dir / "lost.catalog", catalog));
  MountedEventfs m({"-o", "catalog=" + dir / "lost.catalog"});
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  ASSERT_TRUE(ResizesRings(inst, "131072"));
  const std::string stream = m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  int fd = ::open(stream.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << stream << ": " << std::strerror(errno);
  std::atomic<bool> written{false};
  long long markers = 0;
  std::string write_error;
  std::thread writer([&] {
    if (!pin_current_thread(cpu)) {
      write_error = "cannot pin to CPU " + std::to_string(cpu);
      written = true;
      return;
    }
    const int out = ::open((inst + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    if (out < 0) {
      write_error = std::string("trace_marker: ") + std::strerror(errno);
      written = true;
      return;
    }
    const double record_bytes = projections * static_cast<double>(EVENTFS_RECORD_SIZE(64));
    // (Last, 0.3 s as fast as it can: the queue overflows whatever the rates.)
    for (double mb_per_s = 40; mb_per_s <= 70 && write_error.empty(); mb_per_s += 5) {
      const double rate = mb_per_s * 1e6 / record_bytes;  // markers a second
      const auto start = std::chrono::steady_clock::now();
      const bool full = mb_per_s > 65;
      for (long long n = 0; full ? std::chrono::steady_clock::now() < start + 300ms : n < static_cast<long long>(rate * 0.7);
           ++n, ++markers) {
        if (!full && n % 64 == 0) std::this_thread::sleep_until(start + std::chrono::duration<double>(n / rate));
        char text[32];
        const int len = std::snprintf(text, sizeof text, "lm-%lld", markers);
        if (::write(out, text, static_cast<std::size_t>(len)) != len) {
          write_error = std::string("trace_marker: ") + std::strerror(errno);
          break;
        }
      }
    }
    ::close(out);
    written = true;
  });
  struct Finish {  // (also when an assertion ends the test early)
    std::thread& writer;
    int& fd;
    ~Finish() {
      if (writer.joinable()) writer.join();
      if (fd >= 0) ::close(fd);
    }
  } finish{writer, fd};

  // Read as the reader did, until nothing came for a second after
  // the last marker (bounded), but at most 256 KiB every 20 ms (12.5 MB/s):
  // well below the writer's rates, so that it is the reader that falls
  // behind, also where the daemon (a sanitized build, a kernel that keeps
  // 4 KiB sub-buffers) is slower than the writer and the records wait in
  // the kernel's ring rather than in eventfs's queue.
  std::vector<char> buf(256 << 10);
  struct Gap {
    long long after;          // the item before it (-1: none)
    std::uint64_t missing = 0, reported = 0;
    int records = 0;
  };
  std::vector<Gap> wrong;  // the first few gaps that are not as promised
  std::size_t gaps = 0, bad_gaps = 0, lost_records = 0, read_records = 0;
  std::uint64_t lost_total = 0;
  std::vector<std::string> odd;
  long long next = 0;  // the item after the last record read
  Gap open{-1};
  auto close_gap = [&](long long item) {
    open.missing = static_cast<std::uint64_t>(item - next);
    if (open.missing || open.records) {
      gaps += open.missing ? 1 : 0;
      if (open.reported != open.missing || open.records != (open.missing ? 1 : 0)) {
        ++bad_gaps;
        if (wrong.size() < 5) wrong.push_back(open);
      }
    }
    open = Gap{item};
  };
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    if (ready == 0 && written) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GE(n, 0) << std::strerror(errno);
    for (std::size_t at = 0; at < static_cast<std::size_t>(n);) {
      const auto* h = reinterpret_cast<const eventfs_record_header*>(buf.data() + at);
      const std::uint32_t size = eventfs_record_check(h, static_cast<std::size_t>(n) - at);
      ASSERT_NE(size, 0u) << "a malformed record";
      if (h->id == EVENTFS_ID_LOST) {
        eventfs_lost l;
        std::memcpy(&l, buf.data() + at + sizeof *h, sizeof l);
        if (static_cast<int>(l.cpu) != cpu && odd.size() < 10) odd.push_back("lost record of cpu " + std::to_string(l.cpu));
        open.reported += l.count;
        ++open.records;
        lost_total += l.count;
        ++lost_records;
      } else {
        const std::string text(buf.data() + at + sizeof *h, strnlen(buf.data() + at + sizeof *h, 64));
        const long long number = lost_marker_number(text.data(), text.size());
        const long long item = number * projections + (h->id - 1000);
        if (number < 0 || h->id < 1000 || h->id >= 1000u + projections || item < next) {
          if (odd.size() < 10) odd.push_back("record " + std::to_string(h->id) + " '" + text + "' out of place");
        } else {
          close_gap(item);
          next = item + 1;
          ++read_records;
        }
      }
      at += size;
    }
    std::this_thread::sleep_for(20ms);
  }
  writer.join();
  close_gap(markers * projections);
  const std::string stats = slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
  ::close(fd);
  fd = -1;
  ASSERT_EQ(write_error, "");

  std::ostringstream ctx;
  ctx << read_records << " records read, " << gaps << " gaps, " << lost_records << " lost records totalling "
      << lost_total << "; eventfs stats:\n" << stats;
  for (const Gap& g : wrong)
    ctx << "gap after item " << g.after << ": " << g.missing << " missing, " << g.records << " lost records reporting "
        << g.reported << "\n";
  EXPECT_TRUE(odd.empty()) << join(odd);
  ASSERT_GT(stat_value(stats, "dropped by eventfs"), 0) << "eventfs's queue never overflowed; " << ctx.str();
  ASSERT_EQ(stat_value(stats, "lost events"), 0) << "the kernel lost events: not this test's case; " << ctx.str();
  EXPECT_EQ(bad_gaps, 0u) << "gaps without exactly one lost record of their count; " << ctx.str();
  EXPECT_EQ(static_cast<long long>(read_records + lost_total), markers * projections) << ctx.str();
  EXPECT_EQ(static_cast<long long>(lost_total), stat_value(stats, "dropped by eventfs") + stat_value(stats, "lost events"))
      << ctx.str();
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamLostPlacement, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "StableEventsAMarker"; });

// ---------------------------------------------------------------------------
// Once known daemon bugs, fixed: kept as regression tests.
// ---------------------------------------------------------------------------
// 6. A stream carries a stable event only while its own enable reads 1 (or
//    a trigger holds it armed): not because its raw event is enabled for
//    someone else -- raw/ or another stable event over the same raw event.

}  // namespace
}  // namespace eventfs_it
