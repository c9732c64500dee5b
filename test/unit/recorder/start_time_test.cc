// Where a recording starts: the "clock now:" line of the mount's stats, and
// the records (lost-events records included) older than it left out.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "recorder/cpu_recorder.h"
#include "recorder/start_time.h"
#include "recorder/tsdl.h"
#include "record_bytes.h"
#include "support/files.h"
#include "support/temp_dirs.h"

namespace eventfs::recorder {
namespace {

TEST(RecordStartTime, ParsesTheClockNowLineOfTheStats) {
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

TEST(RecordStartTime, RecordsAndLossesOlderThanTheStartAreNotWritten) {
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
  ASSERT_TRUE(r.open(dir / "out"));

  std::vector<unsigned char> bytes;
  add_event_record(bytes, e.id, 10, 1);
  add_lost_record(bytes, 500, 4000);   // a loss from before the start
  add_event_record(bytes, e.id, 999, 2);
  add_event_record(bytes, 77, 999, 3);  // another event's, before the start
  add_event_record(bytes, e.id, 1000, 4);
  add_lost_record(bytes, 1500, 3);      // a loss while recording
  add_event_record(bytes, e.id, 1600, 5);
  add_lost_record(bytes, 0, 2);         // a loss without a time: kept
  EXPECT_EQ(r.take(bytes.data(), bytes.size()), bytes.size());
  ASSERT_TRUE(r.finish());
  EXPECT_EQ(r.events(), 2u);
  EXPECT_EQ(r.lost(), 5u);
  EXPECT_EQ(r.older(), 4u);
  EXPECT_EQ(r.skipped(), 0u);

  // Each loss closes the packet before it; the last loss gets an empty packet.
  auto packets = packets_of(eventfs_it::slurp(dir / "out/stream_0"));
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0], std::make_pair(std::uint64_t{1000}, std::uint64_t{0}));
  EXPECT_EQ(packets[1], std::make_pair(std::uint64_t{1600}, std::uint64_t{3}));
  EXPECT_EQ(packets[2], std::make_pair(std::uint64_t{1600}, std::uint64_t{5}));
}

}  // namespace
}  // namespace eventfs::recorder
