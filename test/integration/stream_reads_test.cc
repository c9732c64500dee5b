// Which events are streamed (enable set or armed), reads smaller than a record and
// larger than a FUSE request, the bugs found while writing the stream tests, and
// the decode example. Needs root, FUSE and a live tracefs.

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
#include "support/stream_reading.h"
#include "support/sched_switch.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamWanted : public StreamTest {};

TEST_F(StreamWanted, OnlyStableEventsWhoseEnableIsSetOrArmedAreStreamed) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string catalog = dir / "two-over-one.catalog";
  ASSERT_TRUE(write_text_file(catalog, slurp(std::string(kSourceDir) + "/src/catalog/default.catalog") +
                                           "\nSTABLE_EVENT(switch_next, sched:sched_switch, id=1001,\n"
                                           "\t__field(pid_t, next_pid) = next_pid\n)\n"));
  MountedEventfs m(std::vector<std::string>{"-o", "catalog=" + catalog});
  ASSERT_TRUE(m.Start());
  Collector col({m / "trace_pipe"}, false);
  ASSERT_TRUE(col.Start());
  auto count = [&](const std::string& event) {
    std::size_t n = 0;
    for (const auto& l : col.Lines())
      if (l.find(": " + event + ": ") != std::string::npos) ++n;
    return n;
  };
  // sched_wakeup, on throughout, shows when the switches of a ping-pong
  // have been through the stream.
  ASSERT_TRUE(Writes(m / "sched_wakeup/enable", "1", m / "error_log"));
  auto settle = [&] {
    std::size_t before = count("sched_wakeup");
    ping_pong(50);
    EXPECT_TRUE(col.WaitFor([&] { return count("sched_wakeup") >= before + 50; }, 5s))
        << "the ping-pong's wakeups did not come through";
    std::this_thread::sleep_for(100ms);
  };

  // The raw event on through raw/: neither stable event's enable reads 1.
  ASSERT_TRUE(Writes(m / "raw/sched/sched_switch/enable", "1", m / "error_log"));
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  EXPECT_EQ(slurp(m / "switch_next/enable"), "0\n");
  settle();
  EXPECT_EQ(count("sched_switch"), 0u) << "sched_switch streamed while its enable reads 0";
  EXPECT_EQ(count("switch_next"), 0u) << "switch_next streamed while its enable reads 0";

  // One of the two on: only that one.
  ASSERT_TRUE(Writes(m / "switch_next/enable", "1", m / "error_log"));
  settle();
  EXPECT_GT(count("switch_next"), 0u);
  EXPECT_EQ(count("sched_switch"), 0u) << "sched_switch streamed because switch_next shares its raw event";

  // Off again: nothing more of switch_next.
  ASSERT_TRUE(Writes(m / "switch_next/enable", "0", m / "error_log"));
  settle();
  std::size_t next_before = count("switch_next");
  settle();
  EXPECT_EQ(count("switch_next"), next_before) << "switch_next streamed after it was disabled";

  // Off at the stable level, sched_switch armed by a trigger on
  // sched_wakeup: once the trigger fires, sched_switch (reading 1*) streams.
  // The kernel arms the raw event, so switch_next reads 1* as well, and the
  // streams follow what the enable files say.
  ASSERT_TRUE(Writes(m / "raw/sched/sched_switch/enable", "0", m / "error_log"));
  ASSERT_TRUE(Writes(m / "sched_wakeup/trigger", "enable_event:sched_switch", m / "error_log"));
  EXPECT_NE(slurp(m / "sched_switch/enable").find('*'), std::string::npos);
  EXPECT_NE(slurp(m / "switch_next/enable").find('*'), std::string::npos);
  settle();
  EXPECT_GT(count("sched_switch"), 0u) << "the armed sched_switch did not stream; enable reads "
                                       << slurp(m / "sched_switch/enable");
  EXPECT_GT(count("switch_next"), next_before) << "switch_next reads " << slurp(m / "switch_next/enable");

  // The trigger gone, the kernel leaves its fired target on (as tracefs
  // shows it): it reads 1 and streams until it is switched off.
  EXPECT_TRUE(Writes(m / "sched_wakeup/trigger", "!enable_event:sched_switch", m / "error_log"));
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "1\n");
  EXPECT_EQ(slurp(instance_dir(m.instance()) + "/events/sched/sched_switch/enable"), "1\n");
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  EXPECT_EQ(slurp(instance_dir(m.instance()) + "/events/sched/sched_switch/enable"), "0\n");
  settle();
  std::size_t switch_before = count("sched_switch");
  next_before = count("switch_next");
  settle();
  EXPECT_EQ(count("sched_switch"), switch_before);
  EXPECT_EQ(count("switch_next"), next_before);
  EXPECT_TRUE(col.Problems().empty()) << col.Problems()[0];
}

class StreamKnownBug : public StreamTest {};
class StreamSmallReads : public StreamTest {};

// ftrace:print (like every ftrace:* event) has no enable or filter file in
// tracefs: it is always on. eventfs used to list marker/enable and
// marker/filter (and raw/ftrace/print/{enable,filter}) anyway, failing with
// ENOENT on reads.
// Whatever the fix (hide the files, or an always-on enable), a file the
// mount lists must be readable, and an enable it lists must take a 1.
TEST_F(StreamKnownBug, ControlFilesOfAnAlwaysOnRawEventWork) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  for (const std::string d : {"marker", "raw/ftrace/print"}) {
    auto names = list_dir(m / d);
    for (const auto& name : names) {
      std::string text;
      EXPECT_EQ(read_file(m / (d + "/" + name), text), 0) << d << "/" << name << " is listed but cannot be read";
    }
    if (std::find(names.begin(), names.end(), "enable") != names.end()) {
      EXPECT_TRUE(Writes(m / (d + "/enable"), "1", m / "error_log"));
      EXPECT_EQ(slurp(m / (d + "/enable")), "1\n") << d;
    }
  }
}

// include/eventfs/record.h: "Each read() returns whole records only (never a
// partial one)". A read(2) of fewer bytes than the next record returns the
// first bytes of that record instead (and the rest on the next reads): with
// sched_switch records of 64 bytes, read(fd, buf, 24) returns 24 bytes.
// record.h: a buffer smaller than the next record gets its first bytes, and
// the following reads of the same open file get the rest before anything
// else, so the bytes read in any sizes still make whole records.
TEST_F(StreamSmallReads, ReadsSmallerThanARecordStillMakeWholeRecords) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  int fd = ::open((m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw")).c_str(),
                  O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  ping_pong(50, cpu);
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  std::string bytes;
  bool saw_partial = false;
  const std::size_t sizes[] = {24, 8, 100, 3, sizeof(eventfs_record_header), 61};
  for (int i = 0; i < 60; ++i) {
    alignas(8) char buf[128];
    std::size_t size = sizes[i % 6];
    ssize_t n = ::read(fd, buf, size);
    if (n < 0) {
      ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
      break;
    }
    ASSERT_LE(static_cast<std::size_t>(n), size);
    saw_partial |= n % 8 != 0;
    bytes.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  ASSERT_GT(bytes.size(), 200u) << "no data to test with";
  EXPECT_TRUE(saw_partial) << "the reads were meant to cut records";
  // Whole records up to the last complete one; what follows is one record's start.
  std::string aligned(bytes.size() + 8, '\0');
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  std::size_t off = 0, records = 0;
  while (off < bytes.size()) {
    std::uint32_t sz = eventfs_record_check(reinterpret_cast<const eventfs_record_header*>(aligned.data() + off),
                                            bytes.size() - off);
    if (sz == 0) break;
    const auto* h = reinterpret_cast<const eventfs_record_header*>(aligned.data() + off);
    EXPECT_TRUE(h->id == 1 || h->id == EVENTFS_ID_LOST) << "record " << records << " has id " << h->id;
    off += sz;
    ++records;
  }
  EXPECT_GT(records, 3u);
  EXPECT_LT(bytes.size() - off, EVENTFS_RECORD_SIZE(44)) << "bytes after the last whole record are not a record's start";
}

// DESIGN/brief: unmounting with readers parked (fusermount3 -u -z) must let
// them return within 2 s. A lazy unmount only detaches the mount: FUSE
// sends nothing while files are open, so eventfs watches its mount
// disappear (MountWatch), answers the parked readers and ends, quietly.
TEST_F(StreamKnownBug, ALazyUnmountReleasesParkedReaders) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  Children kids;
  kids.SpawnCat(m / "trace_pipe");
  kids.SpawnCat(m / "per_cpu/cpu0/trace_pipe_raw");
  ASSERT_TRUE(kids.WaitAllInRead(5s));
  RunResult u = run({"/usr/bin/fusermount3", "-u", "-z", m.path()}, 5s);
  ASSERT_EQ(u.exit_code(), 0) << u.describe();
  bool all = wait_until(
      [&] {
        kids.Reap();
        return kids.Status(0) && kids.Status(1);
      },
      2s);
  EXPECT_TRUE(all) << "readers still parked 2 s after fusermount3 -u -z: " << describe_status(kids.Status(0)) << ", "
                   << describe_status(kids.Status(1));
  EXPECT_TRUE(m.WaitExit(3s)) << "the daemon is still running";
  // (libfuse's own unmount of the mount already gone said "fuse: failed to
  // unmount ...: Invalid argument".)
  EXPECT_EQ(m.Stderr(), "");
}

// A read larger than one FUSE request (256 pages), or from a buffer that is
// not page aligned, reaches the daemon as several requests, the next one
// sent only when the one before was filled. When whole records filled the
// first, the second took the first bytes of the next record: the read ended
// within a record and the next one began with its tail (record.h promises
// whole records to any buffer of EVENTFS_RECORD_MAX_SIZE bytes or more).
TEST_F(StreamSmallReads, ReadsLargerThanOneFuseRequestKeepEveryRecordOnce) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const unsigned id = event_id(m, "marker");
  const int cpu = test_cpu();
  const std::string path = m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  constexpr int kMarkers = 20000;
  MarkerWriteResult w = write_markers(instance_dir(m.instance()) + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.error, "");
  std::this_thread::sleep_for(300ms);  // the producer moves them into the queue

  // 1 MiB 16 bytes into a page (what malloc gives): the kernel asks for
  // 1 MiB - 16 bytes (256 pages), which 13107 marker records of 80 bytes
  // fill exactly, and then for the last 16 bytes.
  std::vector<char> mem((1u << 20) + 8192);
  char* buf = mem.data() + (4096 - reinterpret_cast<std::uintptr_t>(mem.data()) % 4096) + 16;
  std::string bytes;
  std::vector<ssize_t> reads;
  for (int idle = 0; idle < 5;) {
    ssize_t n = ::read(fd, buf, 1u << 20);
    if (n > 0) {
      // Whole records in this read alone.
      std::size_t at = 0;
      while (at + sizeof(eventfs_record_header) <= static_cast<std::size_t>(n)) {
        eventfs_record_header h;
        std::memcpy(&h, buf + at, sizeof h);
        if (h.size < sizeof h || h.size % EVENTFS_RECORD_ALIGN) break;
        at += h.size;
      }
      EXPECT_EQ(at, static_cast<std::size_t>(n)) << "read " << reads.size() << " of " << n
                                                 << " bytes does not end with a whole record";
      bytes.append(buf, static_cast<std::size_t>(n));
      reads.push_back(n);
      idle = 0;
      continue;
    }
    ASSERT_TRUE(n < 0 && errno == EAGAIN) << "read: " << (n < 0 ? std::strerror(errno) : "end of file");
    ++idle;
    std::this_thread::sleep_for(50ms);
  }
  ::close(fd);
  std::vector<int> seq;
  std::size_t off = 0, lost = 0, odd = 0;
  while (off + sizeof(eventfs_record_header) <= bytes.size()) {
    eventfs_record_header h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.size < sizeof h || h.size % EVENTFS_RECORD_ALIGN || off + h.size > bytes.size()) break;
    if (h.id == EVENTFS_ID_LOST) {
      ++lost;
    } else if (h.id == id) {
      const char* text = bytes.data() + off + sizeof h;
      seq.push_back(marker_number(strip_marker_end(std::string(text, strnlen(text, 64)), '\n')));
    } else {
      ++odd;
    }
    off += h.size;
  }
  std::ostringstream ctx;
  ctx << reads.size() << " reads, " << bytes.size() << " bytes, " << seq.size() << " markers";
  EXPECT_EQ(off, bytes.size()) << "not whole records from byte " << off << "; " << ctx.str();
  EXPECT_EQ(lost, 0u) << ctx.str();
  EXPECT_EQ(odd, 0u) << ctx.str();
  ASSERT_EQ(seq.size(), static_cast<std::size_t>(kMarkers)) << ctx.str();
  for (int i = 0; i < kMarkers; ++i) ASSERT_EQ(seq[static_cast<std::size_t>(i)], i) << ctx.str();
}

// The example for tool authors (examples/decode_raw.c, built with the daemon,
// nothing but <eventfs/record.h>) decodes a live per-CPU stream.
class StreamExample : public StreamTest {};

TEST_F(StreamExample, DecodeRawPrintsTheRecordsOfACpu) {
  std::string bin = kBinary;
  const std::string decode = bin.substr(0, bin.rfind("/src/")) + "/examples/decode_raw";
  ASSERT_TRUE(exists(decode)) << decode;
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  ping_pong(50, cpu);
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  // The stream never ends: timeout(1) stops the example once it has drained it.
  auto r = run({"/usr/bin/timeout", "2", decode, m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw")}, 10s);
  auto lines = split_lines(r.out);
  if (!r.out.empty() && r.out.back() != '\n') lines.pop_back();  // cut by timeout's signal
  ASSERT_GT(lines.size(), 50u) << r.describe();
  const std::string sched_switch = " id " + slurp(m / "sched_switch/id").substr(0, 1) + " size " +
                                   std::to_string(EVENTFS_RECORD_SIZE(44));
  int switches = 0;
  for (const auto& l : lines) {
    EXPECT_TRUE(std::regex_match(l, std::regex(R"(\d+ (pid \d+ id \d+ size \d+|cpu \d+ lost \d+( \(estimated\))?))"))) << l;
    switches += l.find(sched_switch) != std::string::npos;
  }
  EXPECT_GT(switches, 50) << head_lines(r.out);
}

}  // namespace
}  // namespace eventfs_it
