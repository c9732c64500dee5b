// The read() reader over a copy of a tracefs instance (plain files): whole
// sub-buffers read back to back and walked.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/fixture_kernels.h"
#include "ring/ring.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using testing::CollectSink;
using testing::SubbufBuilder;
namespace fs = std::filesystem;

class FakeInstance {
 public:
  explicit FakeInstance(const std::string& kernel) {
    char tmpl[] = "/tmp/eventfs-readring-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ + "/per_cpu/cpu0");
    fs::create_directories(dir_ + "/events");
    fs::copy_file(testing::fixture_dir(kernel) + "/events/header_page", dir_ + "/events/header_page");
  }
  ~FakeInstance() { fs::remove_all(dir_); }
  void write_pages(const std::vector<std::vector<std::uint8_t>>& pages) {
    std::ofstream out(dir_ + "/per_cpu/cpu0/trace_pipe_raw", std::ios::binary);
    for (const auto& p : pages) out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()));
  }
  void write_stats(std::uint64_t overrun) {
    std::ofstream(dir_ + "/per_cpu/cpu0/stats") << "entries: 0\noverrun: " << overrun << "\ncommit overrun: 0\n";
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

std::vector<std::uint8_t> ev(std::uint8_t tag) { return {tag, 0, 0, 0, 0, 0, 0, 0}; }

// A kernel whose events/header_event describes another event header: no
// ring is opened, and the error says which line.
TEST(ReadRing, AnEventHeaderTheWalkDoesNotKnowIsRefused) {
  FakeInstance inst("linux-6.18");
  inst.write_stats(0);
  inst.write_pages({SubbufBuilder(8, 1).event(ev('a')).build()});
  std::ifstream in(testing::fixture_dir("linux-6.18") + "/events/header_event");
  std::stringstream text;
  text << in.rdbuf();
  std::string changed = text.str();
  changed.replace(changed.find("type == 30"), 10, "type == 31");
  std::ofstream(inst.path() + "/events/header_event") << changed;
  auto refused = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
  EXPECT_FALSE(refused);
  const std::string err = refused.reason();
  EXPECT_NE(err.find("events/header_event: an event header eventfs cannot walk (time_extend : type == 31)"),
            std::string::npos)
      << err;
  std::ofstream(inst.path() + "/events/header_event") << text.str();
  auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
  EXPECT_TRUE(opened) << opened.reason();
}

TEST(ReadRing, ReadsWholeSubbufsAndReportsMarks) {
  for (const char* kernel : {"linux-6.18", "linux-32bit-alt"}) {
    SCOPED_TRACE(kernel);
    unsigned ls = std::string(kernel) == "linux-32bit-alt" ? 4 : 8;
    FakeInstance inst(kernel);
    inst.write_stats(0);
    SubbufBuilder a(ls, 10), b(ls, 20), c(ls, 30);
    a.event(ev('a')).event(ev('b'));
    b.event(ev('c')).missed(4);
    c.event(ev('d')).missed(-1);
    inst.write_pages({a.build(), b.build(), c.build()});
    auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    EXPECT_STREQ(ring->mode(), "read");
    EXPECT_EQ(ring->subbuf_size(), static_cast<std::uint32_t>(sysconf(_SC_PAGESIZE)));
    inst.write_stats(4 + 6);  // the unmarked count comes from the stats file
    CollectSink sink;
    // Each of these sub-buffers is short of full, as the one the writer is
    // on: a drain stops after it (the next one, when the kernel says the
    // ring is buffer_percent full, goes on), but not after the first one
    // of the next drain (it may be the rest of the page caught up on).
    ASSERT_EQ(ring->drain(sink, 1).value(), 1u);    // a
    ASSERT_EQ(ring->drain(sink, 100).value(), 1u);  // b, the end of a short sub-buffer
    ASSERT_EQ(ring->drain(sink, 100).value(), 2u);  // c, then d
    ASSERT_EQ(ring->drain(sink, 100).value(), 0u);
    ASSERT_EQ(sink.items.size(), 6u);
    EXPECT_EQ(sink.items[0].raw[0], 'a');
    EXPECT_EQ(sink.items[1].raw[0], 'b');
    EXPECT_TRUE(sink.items[2].lost);
    EXPECT_EQ(sink.items[2].count, 4u);
    EXPECT_FALSE(sink.items[2].unknown);
    EXPECT_EQ(sink.items[2].ts, 20u);
    EXPECT_EQ(sink.items[3].raw[0], 'c');
    EXPECT_TRUE(sink.items[4].lost);
    EXPECT_TRUE(sink.items[4].unknown);
    EXPECT_EQ(sink.items[4].count, 6u);
    EXPECT_EQ(sink.items[5].raw[0], 'd');
    RingStats s = ring->stats();
    EXPECT_EQ(s.entries, 4u);
    EXPECT_EQ(s.lost, 10u);
    EXPECT_EQ(s.unknown_lost, 1u);
    EXPECT_EQ(s.subbufs, 3u);
    EXPECT_EQ(s.overrun, 10u);
  }
}

// Full sub-buffers (the writer has left them) are read one after the other
// in one drain, up to the first short one.
TEST(ReadRing, ReadsFullSubbufsInOneDrainAndStopsAtAShortOne) {
  FakeInstance inst("linux-6.18");
  inst.write_stats(0);
  std::vector<std::vector<std::uint8_t>> pages;
  std::size_t full_events = 0;
  for (int p = 0; p < 3; ++p) {
    SubbufBuilder b(8, 100 * static_cast<std::uint64_t>(p));
    while (b.data_size() + 12 <= 4096 - b.header()) {
      b.event(ev('f'));
      ++full_events;
    }
    pages.push_back(b.build());
  }
  SubbufBuilder tail(8, 1000);
  tail.event(ev('t'));
  pages.push_back(tail.build());
  pages.push_back(tail.build());  // more that the next drain gets
  inst.write_pages(pages);
  auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  CollectSink sink;
  EXPECT_EQ(ring->drain(sink, 100000).value(), static_cast<std::size_t>(full_events + 1));
  EXPECT_EQ(ring->drain(sink, 100000).value(), 1u);
  EXPECT_EQ(ring->drain(sink, 100000).value(), 0u);
}

// After a drain stopped at the writer's sub-buffer, the next read gives
// the rest of that sub-buffer (short: the writer filled it and left) and
// then whole ones: the drain goes on through them. (Stopping at that rest
// left the ring to overrun in a storm.)
TEST(ReadRing, TheRestOfTheSubbufCaughtUpOnDoesNotEndTheNextDrain) {
  FakeInstance inst("linux-6.18");
  inst.write_stats(0);
  auto full = [](std::uint64_t ts, std::size_t& n) {
    SubbufBuilder b(8, ts);
    while (b.data_size() + 12 <= 4096 - b.header()) {
      b.event(ev('f'));
      ++n;
    }
    return b.build();
  };
  auto short_page = [](std::uint64_t ts, char tag, int events) {
    SubbufBuilder b(8, ts);
    for (int i = 0; i < events; ++i) b.event(ev(static_cast<std::uint8_t>(tag)));
    return b.build();
  };
  std::size_t first = 0, second = 0;
  std::vector<std::vector<std::uint8_t>> pages;
  pages.push_back(full(1, first));
  pages.push_back(short_page(2, 'w', 3));  // the writer's page, read in part
  first += 3;
  pages.push_back(short_page(3, 'r', 5));  // its rest, once the writer left it
  pages.push_back(full(4, second));
  pages.push_back(full(5, second));
  pages.push_back(short_page(6, 'w', 2));  // the writer's page again
  inst.write_pages(pages);
  auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  CollectSink sink;
  EXPECT_EQ(ring->drain(sink, 100000).value(), static_cast<std::size_t>(first));
  EXPECT_EQ(ring->drain(sink, 100000).value(), static_cast<std::size_t>(5 + second + 2));
  EXPECT_EQ(ring->drain(sink, 100000).value(), 0u);
}

// Losses are counted from the overrun counter where the last reader left
// it, unless the counter has been reset since (writing the instance's trace
// file resets it): then from 0, everything it counts having been
// overwritten after the reset.
TEST(ReadRing, LossesCountFromACounterResetWhileNoStreamWasOpen) {
  for (std::uint64_t counter_at_open : {3, 600}) {
    SCOPED_TRACE(counter_at_open);
    FakeInstance inst("linux-6.18");
    inst.write_stats(counter_at_open);
    SubbufBuilder a(8, 10);
    a.event(ev('a')).missed(-1);
    inst.write_pages({a.build()});
    auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    ring->count_losses_from(500);  // the last reader saw the counter at 500
    inst.write_stats(counter_at_open + 7);
    CollectSink sink;
    ASSERT_EQ(ring->drain(sink, 100).value(), 1u);
    ASSERT_EQ(sink.items.size(), 2u);
    EXPECT_TRUE(sink.items[0].lost);
    EXPECT_TRUE(sink.items[0].unknown);
    // Reset (3 < 500): all 3 + 7 of them; not reset: the 100 + 7 since the last reader.
    EXPECT_EQ(sink.items[0].count, counter_at_open == 3 ? 10u : 107u);
  }
}

// A sub-buffer whose header claims more events than read(2) gave is
// refused, and the reason says so.
TEST(ReadRing, ASubbufItsHeaderDoesNotFitIsAnErrorThatSaysWhy) {
  FakeInstance inst("linux-6.18");
  SubbufBuilder a(8, 10);
  a.event(ev('a'));
  std::vector<std::uint8_t> page = a.build();
  const std::uint64_t commit = page.size();  // (8 bytes more than it holds)
  std::memcpy(page.data() + 8, &commit, 8);
  inst.write_pages({page});
  auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Read);
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  CollectSink sink;
  Result<std::size_t> drained = ring->drain(sink, 100);
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.code(), EIO);
  EXPECT_EQ(drained.reason(), "the " + std::to_string(page.size()) + " bytes read(2) gave: its header says " +
                                std::to_string(page.size()) + " bytes of events, and it holds " +
                                std::to_string(page.size() - 16));
  EXPECT_TRUE(sink.items.empty());
}

TEST(ReadRing, AutoReadsOffTracefsAndMmapCannot) {
  FakeInstance inst("linux-6.18");
  SubbufBuilder a(8, 10);
  a.event(ev('a'));
  inst.write_pages({a.build()});
  auto opened = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Auto);
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  EXPECT_STREQ(ring->mode(), "read");
  auto mmap = open_cpu_ring(RingFiles(inst.path()), 0, ReaderMode::Mmap);
  EXPECT_FALSE(mmap);
  EXPECT_NE(mmap.reason().find("not a tracefs file"), std::string::npos) << mmap.reason();
  auto cpu1 = open_cpu_ring(RingFiles(inst.path()), 1, ReaderMode::Read);
  EXPECT_FALSE(cpu1);
  EXPECT_NE(cpu1.reason().find("cpu1/trace_pipe_raw"), std::string::npos) << cpu1.reason();
}

TEST(ReadRing, ReaderModeNames) {
  EXPECT_EQ(parse_reader_mode("auto").value(), ReaderMode::Auto);
  EXPECT_EQ(parse_reader_mode("mmap").value(), ReaderMode::Mmap);
  EXPECT_EQ(parse_reader_mode("read").value(), ReaderMode::Read);
  Result<ReaderMode> splice = parse_reader_mode("splice");
  ASSERT_FALSE(splice);
  EXPECT_EQ(splice.code(), EINVAL);
  EXPECT_EQ(splice.reason(), "expected auto, mmap or read");
  EXPECT_STREQ(reader_mode_name(ReaderMode::Mmap), "mmap");
}

}  // namespace
}  // namespace eventfs
