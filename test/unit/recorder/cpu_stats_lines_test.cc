// Where a recording starts and ends: the "clock now:" line of the mount's
// stats, the records (lost-events records included) older than the start
// and those from the end on left out; and what the stats say is unread.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "recorder/cpu_recorder.h"
#include "recorder/cpu_stats_lines.h"
#include "recorder/tsdl.h"
#include "record_bytes.h"
#include "support/files.h"
#include "support/temp_dirs.h"

namespace eventfs::recorder {
namespace {

TEST(RecordStatsLines, ParsesTheClockNowLineOfTheStats) {
  auto v = parse_clock_now("entries: 0\nreader: mmap\nclock now: 601300413000\n", "s");
  ASSERT_TRUE(v) << v.error().reason;
  EXPECT_EQ(*v, 601300413000u);
  auto first = parse_clock_now("clock now: 7", "s");
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 7u);
  auto none = parse_clock_now("entries: 0\nreader: closed\n", "/m/per_cpu/cpu0/stats");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().reason.find("/m/per_cpu/cpu0/stats has no 'clock now:' line"), std::string::npos);
  for (const char* bad : {"clock now: \n", "clock now: 12x\n", "clock now: -3\n", "clock now: 1.5\n"}) {
    auto b = parse_clock_now(bad, "s");
    ASSERT_FALSE(b) << bad;
    EXPECT_NE(b.error().reason.find("is not a number"), std::string::npos) << b.error().reason;
  }
}

TEST(RecordStatsLines, TheUnreadRecordsOfACpuAreItsRingEntriesAndItsQueuedOnes) {
  const std::string stats = "entries: 3\nread events: 9\nring entries: 0\nreader: read\nclock now: 5\n";
  EXPECT_EQ(stats_number(stats, "entries"), 3u);
  EXPECT_EQ(stats_number(stats, "ring entries"), 0u);
  EXPECT_EQ(stats_number(stats, "read events"), 9u);
  EXPECT_EQ(stats_number(stats, "clock now"), 5u);
  EXPECT_EQ(stats_number(stats, "lost events"), std::nullopt);
  EXPECT_EQ(stats_number("entries: 1x\n", "entries"), std::nullopt);
  EXPECT_EQ(stats_number("entries: \n", "entries"), std::nullopt);

  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_EQ(::mkdir((dir / "per_cpu").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir / "per_cpu/cpu0").c_str(), 0755), 0);
  const std::string file = dir / "per_cpu/cpu0/stats";
  ASSERT_TRUE(eventfs_it::write_text_file(file, "entries: 0\nring entries: 0\nclock now: 5\n"));
  EXPECT_TRUE(nothing_unread(dir.path(), 0));
  ASSERT_TRUE(eventfs_it::write_text_file(file, "entries: 0\nring entries: 12\nclock now: 5\n"));
  EXPECT_FALSE(nothing_unread(dir.path(), 0)) << "records wait in the kernel's ring";
  ASSERT_TRUE(eventfs_it::write_text_file(file, "entries: 2\nring entries: 0\nclock now: 5\n"));
  EXPECT_FALSE(nothing_unread(dir.path(), 0)) << "records wait in eventfs's queue";
  ASSERT_TRUE(eventfs_it::write_text_file(file, "entries: 0\n"));
  EXPECT_TRUE(nothing_unread(dir.path(), 0)) << "an eventfs without the kernel's lines: the quiet alone decides";
  EXPECT_TRUE(nothing_unread(dir.path(), 7)) << "no such file: the quiet alone decides";
}

// The packets of a stream file: (timestamp_begin, events_discarded) each.
std::vector<std::pair<std::uint64_t, std::uint64_t>> packets_of(const std::string& bytes) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::size_t at = 0;
  while (at + kFirstEventOffset <= bytes.size()) {
    std::uint64_t begin = 0, size_bits = 0, discarded = 0;
    std::memcpy(&begin, bytes.data() + at + 8, 8);
    std::memcpy(&size_bits, bytes.data() + at + 32, 8);
    std::memcpy(&discarded, bytes.data() + at + 40, 8);
    out.emplace_back(begin, discarded);
    if (size_bits == 0) break;
    at += size_bits / 8;
  }
  return out;
}

TEST(RecordStatsLines, RecordsAndLossesOlderThanTheStartOrFromTheEndOnAreNotWritten) {
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  // A mount with one CPU whose stream is a plain file (take() is fed here).
  ASSERT_EQ(::mkdir((dir / "per_cpu").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir / "per_cpu/cpu0").c_str(), 0755), 0);
  ASSERT_TRUE(eventfs_it::write_text_file(dir / "per_cpu/cpu0/trace_pipe_raw", ""));
  ASSERT_EQ(::mkdir((dir / "out").c_str(), 0755), 0);
  MountLayout layout;
  layout.mount = dir.path();
  Event e;
  e.name = "ev";
  e.id = 2442791997u;
  e.size = e.end = 8;
  layout.events.push_back(e);
  RecordControl control;
  CpuRecorder r(layout, 0, control);
  r.set_start(1000);
  ASSERT_TRUE(r.open(ctf_sink(dir / "out", 0)));
  r.set_end(2000);

  std::vector<unsigned char> bytes;
  add_event_record(bytes, e.id, 10, 1);
  add_lost_record(bytes, 500, 4000);   // a loss from before the start
  add_event_record(bytes, e.id, 999, 2);
  add_event_record(bytes, 77, 999, 3);  // another event's, before the start
  add_event_record(bytes, e.id, 1000, 4);
  add_lost_record(bytes, 1500, 3);      // a loss while recording
  add_event_record(bytes, e.id, 1600, 5);
  add_lost_record(bytes, 0, 2);         // a loss without a time: kept
  add_event_record(bytes, e.id, 1999, 6);
  EXPECT_EQ(r.take(bytes.data(), bytes.size()), bytes.size());
  EXPECT_FALSE(r.past_end());
  std::vector<unsigned char> late;
  add_event_record(late, e.id, 2000, 7);  // from the end on
  add_lost_record(late, 2100, 8);
  add_event_record(late, 77, 2200, 9);
  EXPECT_EQ(r.take(late.data(), late.size()), late.size());
  EXPECT_TRUE(r.past_end()) << "a record from the end on: the CPU's stream is drained";
  ASSERT_TRUE(r.finish());
  EXPECT_EQ(r.events(), 3u);
  EXPECT_EQ(r.lost(), 5u);
  EXPECT_EQ(r.older(), 4u);
  EXPECT_EQ(r.newer(), 3u);
  EXPECT_EQ(r.skipped(), 0u);

  // Each loss closes the packet before it.
  auto packets = packets_of(eventfs_it::slurp(dir / "out/stream_0"));
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0], std::make_pair(std::uint64_t{1000}, std::uint64_t{0}));
  EXPECT_EQ(packets[1], std::make_pair(std::uint64_t{1600}, std::uint64_t{3}));
  EXPECT_EQ(packets[2], std::make_pair(std::uint64_t{1999}, std::uint64_t{5}));
}

}  // namespace
}  // namespace eventfs::recorder
