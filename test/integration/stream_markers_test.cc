// trace_marker writes through a test catalog event over ftrace:print, with
// -o reader=mmap and -o reader=read: every marker once, in order. Needs root, FUSE
// and a live tracefs; the top-level instance is never touched.

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
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamMarkers : public StreamTest, public ::testing::WithParamInterface<MarkerCase> {};

TEST_P(StreamMarkers, EveryMarkerArrivesExactlyOnceInOrderAndStatsShowTheReader) {
  const MarkerCase c = GetParam();
  MarkerMount mm({"-o", std::string("reader=") + c.reader});
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  ASSERT_EQ(slurp(m / "marker/format"), kMarkerFormat);
  const unsigned id = event_id(m, "marker");
  ASSERT_EQ(id, 1000u);
  const int cpus = mount_cpus(m.path());
  if (c.reader == std::string("mmap") && !kernel_maps_rings()) {
    // Before Linux 6.10: the mount is made, its streams fail and say why.
    EXPECT_TRUE(MmapRefusedAsDocumented(m, stream_paths(m, c.via, cpus).front()));
    return;
  }
  const int cpu = test_cpu();
  ASSERT_LT(cpu, cpus);
  const std::string inst = instance_dir(m.instance());
  // ftrace:print has no enable file in tracefs: its records are in the
  // instance's ring whenever its trace_marker is written, and marker/enable
  // reads 1 (see ControlFilesOfAnAlwaysOnRawEventWork below).
  ASSERT_EQ(slurp(m / "marker/enable"), "1\n");

  Collector col(stream_paths(m, c.via, cpus), c.via == Via::Raw);
  ASSERT_TRUE(col.Start());
  constexpr int kMarkers = 2000;
  // About 20k markers a second: bursts of 10, 0.5 ms apart.
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers, 10, 500us);
  ASSERT_EQ(w.error, "");
  ASSERT_EQ(w.written, kMarkers);
  auto count = [&] { return c.via == Via::Text ? col.LineCount() : col.RecordCount(); };
  bool all = col.WaitFor([&] { return count() >= static_cast<std::size_t>(kMarkers); }, 10s);
  EXPECT_TRUE(all) << "only " << count() << " of " << kMarkers << " units within 10 s";
  EXPECT_TRUE(col.WaitQuiet(300ms, 5s));  // anything more would be a duplicate
  // While the stream is open.
  const std::string stats = slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
  col.Stop();
  auto problems = col.Problems();
  EXPECT_TRUE(problems.empty()) << join(problems);

  std::vector<int> seq;
  std::vector<std::string> odd;
  std::size_t lost = 0;
  if (c.via == Via::Text) {
    static const std::regex re("^.*-(-?\\d+) \\[(\\d{3})\\] (\\d+)\\.(\\d{6}): marker: text=(.*)$");
    std::uint64_t last_us = 0;
    for (const auto& line : col.Lines()) {
      std::smatch mm;
      if (line.rfind("CPU:", 0) == 0 && line.find("[LOST") != std::string::npos) {
        ++lost;
        continue;
      }
      if (!std::regex_match(line, mm, re)) {
        if (odd.size() < 10) odd.push_back("unexpected line: " + line);
        continue;
      }
      int n = marker_number(strip_marker_end(mm[5], '?'));
      if (n < 0 || std::stoi(mm[1]) != w.tid || std::stoi(mm[2]) != cpu) {
        if (odd.size() < 10)
          odd.push_back("line not a marker of tid " + std::to_string(w.tid) + " on cpu" + std::to_string(cpu) + ": " +
                        line);
        continue;
      }
      std::uint64_t us = std::stoull(mm[3]) * 1000000u + std::stoull(mm[4]);
      if (us < last_us && odd.size() < 10) odd.push_back("time goes back at: " + line);
      last_us = us;
      seq.push_back(n);
    }
  } else {
    std::uint64_t last_ts = 0;
    for (const auto& r : col.Records()) {
      if (r.header.id == EVENTFS_ID_LOST) {
        ++lost;
        continue;
      }
      if (r.header.id != id || r.payload.size() < 64 || r.header.size != EVENTFS_RECORD_SIZE(64)) {
        if (odd.size() < 10)
          odd.push_back("record of id " + std::to_string(r.header.id) + " size " + std::to_string(r.header.size));
        continue;
      }
      std::string text(r.payload.data(), strnlen(r.payload.data(), 64));
      int n = marker_number(strip_marker_end(text, '\n'));
      if (n < 0 || static_cast<int>(r.stream) != cpu) {
        if (odd.size() < 10)
          odd.push_back("record on cpu" + std::to_string(r.stream) + " with text '" + text + "'");
        continue;
      }
      if (r.header.timestamp < last_ts && odd.size() < 10) odd.push_back("time goes back at " + text);
      last_ts = r.header.timestamp;
      seq.push_back(n);
    }
  }
  EXPECT_EQ(lost, 0u) << "lost-events reports in the stream";
  EXPECT_TRUE(odd.empty()) << join(odd);
  std::vector<int> expected(kMarkers);
  for (int i = 0; i < kMarkers; ++i) expected[i] = i;
  if (seq != expected) {
    std::size_t first = 0;
    while (first < seq.size() && first < expected.size() && seq[first] == expected[first]) ++first;
    std::set<int> distinct(seq.begin(), seq.end());
    ADD_FAILURE() << seq.size() << " markers (" << distinct.size() << " distinct) instead of m-000000..m-"
                  << kMarkers - 1 << " in order; first difference at position " << first << ": got "
                  << (first < seq.size() ? marker_text(seq[first]) : "<end>") << ", want "
                  << (first < expected.size() ? marker_text(expected[first]) : "<end>");
  }
  // The reader is the one asked for, and it lost nothing.
  EXPECT_EQ(parse_stats(stats)["reader"], c.reader) << stats;
  EXPECT_EQ(stat_value(stats, "lost events"), 0) << stats;
  EXPECT_EQ(stat_value(stats, "lost reports"), 0) << stats;
  EXPECT_EQ(stat_value(stats, "dropped by eventfs"), 0) << stats;
  EXPECT_GE(stat_value(stats, "read events"), kMarkers) << stats;
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamMarkers,
                         ::testing::Values(MarkerCase{Via::Text, "mmap"}, MarkerCase{Via::Text, "read"},
                                           MarkerCase{Via::Raw, "mmap"}, MarkerCase{Via::Raw, "read"}),
                         [](const auto& info) {
                           return std::string(info.param.via == Via::Text ? "TracePipe" : "PerCpuRaw") + "_" +
                                  info.param.reader;
                         });

// ---------------------------------------------------------------------------
// 3. Blocking: O_NONBLOCK, poll/epoll, signals, many parked readers, shutdown.

}  // namespace
}  // namespace eventfs_it
