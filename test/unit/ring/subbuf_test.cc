// Sub-buffers walked by SubbufParser: the header page and header event of
// every fixture kernel, the lost-events marks, padding and time extends, and
// malformed or garbage sub-buffers.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "ring/subbuf.h"
#include "support/fixture_kernels.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using testing::CollectSink;
using testing::SubbufBuilder;
using testing::fixture_kernels;
using testing::long_size_of;
using testing::walk;

TEST(Subbuf, HeaderPageGivesTheKernelsLongSize) {
  EXPECT_EQ(long_size_of("linux-2.6.36"), 8u);
  EXPECT_EQ(long_size_of("linux-6.18"), 8u);
  EXPECT_EQ(long_size_of("linux-32bit-alt"), 4u);
  EXPECT_EQ(header_page_long_size("garbage"), 0u);
}

// Every fixture kernel's header_event describes the event header the walk
// knows; changed ones are refused, by the line. (The running kernel's is
// held to it in test/integration/ring_live_test.cc: tracefs wants root.)
TEST(Subbuf, HeaderEventDescribesTheHeaderTheWalkKnows) {
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  for (const auto& kernel : fixture_kernels()) {
    std::string text = text_of(testing::fixture_dir(kernel) + "/events/header_event");
    ASSERT_FALSE(text.empty()) << kernel;
    EXPECT_EQ(header_event_mismatch(text), "") << kernel;
  }
  const std::string today = text_of(testing::fixture_dir("linux-6.18") + "/events/header_event");
  auto changed = [&](const std::string& from, const std::string& to) {
    std::string t = today;
    auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return header_event_mismatch(t.replace(at, from.size(), to));
  };
  EXPECT_EQ(changed("27 bits", "26 bits"), "time_delta  :   26 bits");
  EXPECT_EQ(changed("type == 29", "type == 28"), "padding     : type == 28");
  EXPECT_EQ(changed("data max type_len  == 28", "data max type_len  == 27"), "data max type_len  == 27");
  EXPECT_EQ(changed("\ttime_extend : type == 30\n", ""), "no \"time_extend : type == 30\" line");
  EXPECT_EQ(changed("\tarray       :   32 bits\n", "\tarray       :   32 bits\n\tflags       :    1 bits\n"),
            "flags       :    1 bits");
  EXPECT_NE(header_event_mismatch(""), "");
}

TEST(Subbuf, LostEventMarkersInTheSubbufHeader) {
  for (unsigned ls : {4u, 8u}) {
    SubbufBuilder stored(ls, 77);
    stored.event({1, 0, 0, 0, 0, 0, 0, 0}).missed(123);
    SubbufParser p(ls);
    auto page = stored.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), 123);
    EXPECT_EQ(p.timestamp(), 77u);
    EXPECT_EQ(p.data_size(), 12u);

    SubbufBuilder unknown(ls, 0);
    unknown.event({1, 0, 0, 0}).missed(-1);
    page = unknown.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), -1);

    // A time extend first: kbuffer_missed_events() would say 0 here; the
    // header says otherwise.
    SubbufBuilder extended(ls, 0);
    extended.time_extend(1ull << 30).event({1, 0, 0, 0}, 5).missed(9);
    page = extended.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), 9);
    CollectSink sink;
    std::uint32_t from = 0;
    EXPECT_EQ(p.walk(sink, from, 10), 1u);
    EXPECT_EQ(sink.items[0].ts, (1ull << 30) + 5);
  }
}

TEST(Subbuf, MalformedSubbufIsRefusedOrCutShort) {
  SubbufBuilder b(8, 0);
  b.event(std::vector<std::uint8_t>(16, 1));
  auto page = b.build();
  std::uint64_t commit = 5000;  // larger than the sub-buffer
  std::memcpy(page.data() + 8, &commit, 8);
  SubbufParser p(8);
  EXPECT_FALSE(p.load(page.data(), page.size()));
  // An event whose length word runs past the commit: not delivered.
  SubbufBuilder c(8, 0);
  c.event(std::vector<std::uint8_t>(8, 1)).event(std::vector<std::uint8_t>(200, 2));
  page = c.build();
  commit = 12 + 20;  // the first event and part of the second
  std::memcpy(page.data() + 8, &commit, 8);
  ASSERT_TRUE(p.load(page.data(), page.size()));
  CollectSink sink;
  std::uint32_t from = 0;
  EXPECT_EQ(p.walk(sink, from, 10), 1u);
  EXPECT_EQ(from, p.data_size());
}

TEST(Subbuf, PaddingAndTimeExtendsAreSkipped) {
  SubbufBuilder b(8, 100);
  b.event({1, 0, 0, 0}, 1).padding(16).time_extend(1000).event({2, 0, 0, 0}, 2);
  CollectSink sink = walk(b.build(), 8);
  ASSERT_EQ(sink.items.size(), 2u);
  EXPECT_EQ(sink.items[0].ts, 101u);
  // kbuffer also adds the padding's time delta (the kernel writes 1 there).
  EXPECT_EQ(sink.items[1].ts, 1104u);
  EXPECT_EQ(sink.items[1].raw[0], 2);
}

// Garbage sub-buffers (whatever their commit word says, within the
// capacity) are walked without reading past the sub-buffer (followed by a
// PROT_NONE page), and every record handed out lies inside the committed
// data.
TEST(Subbuf, GarbageIsWalkedWithinBounds) {
  std::mt19937 rng(7);
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  auto* region = static_cast<std::uint8_t*>(mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(region, MAP_FAILED);
  ASSERT_EQ(mprotect(region + pg, pg, PROT_NONE), 0);
  for (unsigned ls : {4u, 8u}) {
    SubbufParser p(ls);
    for (int round = 0; round < 20000; ++round) {
      std::size_t cap = 64 + rng() % 256;
      std::uint8_t* at = region + pg - cap;  // then the guard page
      struct {
        std::uint8_t* p;
        std::uint8_t* get() const { return p; }
      } page{at};
      for (std::size_t i = 0; i < cap; ++i) page.p[i] = static_cast<std::uint8_t>(rng());
      std::uint64_t commit = rng() % 2 ? cap - 8 - ls - rng() % 8 : rng() % (cap - 8 - ls + 1);
      if (rng() % 4 == 0) commit |= 3ull << 30;
      std::memcpy(page.get() + 8, &commit, ls);
      if (!p.load(page.get(), cap)) continue;
      struct Check : RingSink {
        const std::uint8_t* lo;
        const std::uint8_t* hi;
        void record(std::uint64_t, const std::uint8_t* raw, std::uint32_t len) override {
          ASSERT_GE(raw, lo);
          ASSERT_LE(raw + len, hi);
        }
        void lost(std::uint64_t, std::uint64_t, bool) override {}
      } sink;
      sink.lo = page.get() + 8 + ls;
      sink.hi = sink.lo + p.data_size();
      std::uint32_t from = 0;
      p.walk(sink, from, 1000);
    }
  }
  munmap(region, 2 * pg);
}

}  // namespace
}  // namespace eventfs
