// The CTF streams eventfs-record writes, read back by babeltrace2: each event's
// full time from the 32 bits its header carries (across packets, across gaps
// longer than those bits span), its payload at the alignment of its largest
// field, and events of every alignment one after another.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "layout_field.h"
#include "recorder/mount_layout.h"
#include "recorder/stream_writer.h"
#include "recorder/trace_clock.h"
#include "recorder/tsdl.h"

namespace eventfs::recorder {
namespace {

constexpr const char* kBabeltrace = "/usr/bin/babeltrace2";

// "wide" (id 1): a u8 and a u64, so 8-aligned; "narrow" (id 2): char[3].
MountLayout layout() {
  MountLayout l;
  l.mount = "/nowhere";
  Event wide;
  wide.name = "wide";
  wide.id = 1;
  wide.fields = {layout_field("flag", "u8", 8, 0, 1, false, 0), layout_field("val", "u64", 64, 0, 8, false, 8)};
  wide.size = wide.end = 16;
  wide.align = 8;
  Event narrow;
  narrow.name = "narrow";
  narrow.id = 2;
  narrow.fields = {layout_field("txt", "char", 8, 3, 1, false, 0)};
  narrow.size = narrow.end = 3;
  narrow.align = 1;
  l.events = {wide, narrow};
  l.clock = "local";
  l.clock_decl = *declare_clock("local", 100, "/nowhere");
  return l;
}

struct Written {
  std::uint64_t ts;
  bool wide;
  std::uint64_t val;  // wide: val; narrow: the text's first letter
};

std::string printed(const Written& w, std::uint64_t ts, int pid) {
  std::string s = "[" + std::to_string(ts) + "] " + std::to_string(pid) + " ";
  if (w.wide) return s + "wide flag=" + std::to_string(w.val % 200) + " val=" + std::to_string(w.val);
  return s + "narrow txt=" + std::string(1, static_cast<char>('a' + w.val % 26)) + "z";
}

class StreamWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/eventfs-stream-writer-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `events` as one CPU's stream of a CTF trace; babeltrace2's lines,
  // reduced to "[cycles] pid name fields".
  std::vector<std::string> write_and_read(const std::vector<Written>& events) {
    const MountLayout l = layout();
    std::ofstream(dir_ / "metadata") << tsdl_metadata(l, "host", ClockOffset{});
    StreamWriter w;
    EXPECT_TRUE(w.open(dir_ / "stream_0", 0, StreamWriter::kMinPacketSize));
    int pid = 100;
    for (const auto& e : events) {
      if (e.wide) {
        std::array<unsigned char, 16> p{};
        p[0] = static_cast<unsigned char>(e.val % 200);
        std::memcpy(p.data() + 8, &e.val, 8);
        EXPECT_TRUE(w.add_event(e.ts, 1, pid++, p.data(), p.size(), 16, 8));
      } else {
        const char p[3] = {static_cast<char>('a' + e.val % 26), 'z', 0};
        EXPECT_TRUE(w.add_event(e.ts, 2, pid++, p, sizeof p, 3, 1));
      }
    }
    EXPECT_TRUE(w.finish());
    packets_ = w.packets();
    std::vector<std::string> out;
    const std::string cmd = std::string(kBabeltrace) + " --clock-cycles " + dir_.string() + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return out;
    static const std::regex wide_re(
        "^\\[0*(\\d+)\\] \\([^)]*\\) host wide: \\{ cpu_id = 0 \\}, \\{ pid = (\\d+) \\}, "
        "\\{ flag = (\\d+), val = (\\d+) \\}$");
    static const std::regex narrow_re(
        "^\\[0*(\\d+)\\] \\([^)]*\\) host narrow: \\{ cpu_id = 0 \\}, \\{ pid = (\\d+) \\}, \\{ txt = \"(.*)\" \\}$");
    char line[512];
    while (fgets(line, sizeof line, f)) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      std::smatch m;
      if (std::regex_match(s, m, wide_re))
        out.push_back("[" + m[1].str() + "] " + m[2].str() + " wide flag=" + m[3].str() + " val=" + m[4].str());
      else if (std::regex_match(s, m, narrow_re))
        out.push_back("[" + m[1].str() + "] " + m[2].str() + " narrow txt=" + m[3].str());
      else
        out.push_back("unread: " + s);
    }
    EXPECT_EQ(pclose(f), 0) << "babeltrace2 failed";
    return out;
  }

  std::filesystem::path dir_;
  std::uint64_t packets_ = 0;
};

TEST_F(StreamWriterTest, EveryEventsTimeAndFieldsAcrossPacketsAndLongGaps) {
  if (access(kBabeltrace, X_OK) != 0) GTEST_SKIP() << "no " << kBabeltrace;
  constexpr std::uint64_t kSpan = std::uint64_t{1} << 32;
  std::vector<Written> events;
  std::uint64_t ts = 5 * kSpan - 10;  // the low 32 bits wrap after a few events
  std::uint64_t n = 0;
  auto add = [&](std::uint64_t step, bool wide) {
    ts += step;
    events.push_back({ts, wide, n++});
  };
  for (int i = 0; i < 6; ++i) add(3, i % 2 == 0);
  add(kSpan - 1, true);    // the longest step 32 bits carry
  add(kSpan, false);       // one they do not: a packet of its own
  add(3 * kSpan + 7, true);
  add(1, true);
  // Enough events, of both alignments in every order, for many 4 KiB packets.
  for (int i = 0; i < 3000; ++i) add(1 + (i * 7919u) % 200000, (i * 31) % 3 != 0);
  add(kSpan + 1, false);  // a long gap in the middle of a packet's worth
  for (int i = 0; i < 50; ++i) add(2, i % 2 == 1);

  const std::vector<std::string> got = write_and_read(events);
  std::vector<std::string> want;
  int pid = 100;
  for (const auto& e : events) want.push_back(printed(e, e.ts, pid++));
  EXPECT_EQ(got, want);
  EXPECT_GT(packets_, 20u);
}

TEST_F(StreamWriterTest, AnEventBeforeTheClockIsReadAtTheClocksTime) {
  if (access(kBabeltrace, X_OK) != 0) GTEST_SKIP() << "no " << kBabeltrace;
  const std::vector<Written> events = {{1000, true, 1}, {2000, false, 2}, {1500, true, 3}, {2500, false, 4}};
  const std::vector<std::string> got = write_and_read(events);
  const std::vector<std::string> want = {printed(events[0], 1000, 100), printed(events[1], 2000, 101),
                                         printed(events[2], 2000, 102), printed(events[3], 2500, 103)};
  EXPECT_EQ(got, want);
}

// The bytes that pad an event's payload to its alignment and the next event
// to 4 are zero, in every packet: the packet buffer is written over again
// after each flush, by events in other places.
TEST_F(StreamWriterTest, PaddingIsZeroInEveryPacket) {
  StreamWriter w;
  const auto path = dir_ / "stream_0";
  ASSERT_TRUE(w.open(path, 0, StreamWriter::kMinPacketSize));
  std::array<unsigned char, 16> ones;
  ones.fill(0xff);
  // id, payload size (= where its last field ends), alignment
  struct Kind {
    std::uint32_t id;
    std::size_t size, align;
  };
  constexpr std::array<Kind, 3> kKinds = {{{1, 16, 8}, {2, 3, 1}, {3, 5, 2}}};
  std::uint32_t lcg = 1;
  for (int i = 0; i < 2000; ++i) {
    lcg = lcg * 1103515245u + 12345u;
    const Kind& k = kKinds[(lcg >> 16) % 3];
    ASSERT_TRUE(w.add_event(1000 + i, k.id, 7, ones.data(), k.size, k.size, k.align));
  }
  ASSERT_TRUE(w.finish());
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto u64 = [&](std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, file.data() + at, 8);
    return v;
  };
  std::size_t packet = 0, events = 0, pads = 0;
  while (packet < file.size()) {
    ASSERT_LE(packet + kFirstEventOffset, file.size());
    const std::size_t content = u64(packet + 24) / 8, size = u64(packet + 32) / 8;
    ASSERT_LE(packet + size, file.size());
    std::size_t at = kFirstEventOffset;
    while (at < content) {
      std::uint32_t id;
      std::memcpy(&id, file.data() + packet + at + 4, 4);
      ASSERT_TRUE(id >= 1 && id <= 3) << "packet at " << packet << ", event at " << at;
      const Kind& k = kKinds[id - 1];
      const std::size_t from = (at + kEventHeadSize + k.align - 1) / k.align * k.align;
      const std::size_t end = from + k.size, next = (end + 3) / 4 * 4;
      for (std::size_t b = at + kEventHeadSize; b < from; ++b, ++pads)
        ASSERT_EQ(file[packet + b], 0) << "before the payload, packet at " << packet << ", byte " << b;
      for (std::size_t b = from; b < end; ++b) ASSERT_EQ(file[packet + b], 0xff);
      for (std::size_t b = end; b < next && b < size; ++b, ++pads)
        ASSERT_EQ(file[packet + b], 0) << "after the payload, packet at " << packet << ", byte " << b;
      at = next;
      ++events;
    }
    packet += size;
  }
  EXPECT_EQ(events, 2000u);
  EXPECT_GT(pads, 1000u);
}

}  // namespace
}  // namespace eventfs::recorder
