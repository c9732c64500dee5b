// The sub-buffer walk (ring/rb_event.h through SubbufParser) against
// libtraceevent's kbuffer: the same events, at the same places, with the
// same time stamps, on sub-buffers of every kind of header the kernel
// writes, for 4- and 8-byte longs; whole, in steps, and as a writer appends.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ring/rb_event.h"
#include "ring/subbuf.h"
#include "support/synthetic.h"
#include "support/walk_compare.h"

namespace eventfs {
namespace {

using testing::SeenSink;
using testing::Seen;
using testing::SubbufBuilder;
using testing::first_difference;
using testing::kbuffer_walk;
using testing::parser_walk;

// A sub-buffer of every kind of header in a random order: short and long
// events (type_len 1..28 and 0), discarded events (padding with a time
// delta), time extends and absolute time stamps, and at times a padding
// to its end, as rb_reset_tail leaves a full sub-buffer.
std::vector<std::uint8_t> random_subbuf(std::mt19937_64& rng, unsigned long_size, std::size_t capacity) {
  std::uint64_t ts = rng() % 2 ? rng() >> 8 : rng();  // sometimes with the top five bits set
  SubbufBuilder b(long_size, ts, capacity);
  const std::size_t room = capacity - 8 - long_size - 8;  // and a stored lost count
  // Each step takes at most 8 + 300 bytes.
  while (b.data_size() + 8 + 300 <= room) {
    switch (rng() % 10) {
      case 0:
        b.time_extend(rng() % (1ull << 40));
        break;
      case 1:
        b.time_stamp(rng() % (1ull << 59));
        break;
      case 2:
        b.padding(static_cast<std::uint32_t>(rng() % 6 * 4), static_cast<std::uint32_t>(1 + rng() % ((1u << 27) - 1)));
        break;
      default: {
        std::vector<std::uint8_t> data(1 + rng() % (rng() % 4 ? 60 : 300));
        for (auto& c : data) c = static_cast<std::uint8_t>(rng());
        b.event(data, static_cast<std::uint32_t>(rng() % (1u << 27)), rng() % 8 == 0);
      }
    }
  }
  if (rng() % 2 && room - b.data_size() >= 8) b.padding(static_cast<std::uint32_t>(room - b.data_size() - 8));
  if (rng() % 4 == 0) b.missed(rng() % 2 ? -1 : static_cast<std::int64_t>(rng() % 1000));
  return b.build();
}

TEST(RbEvent, AgreesWithKbufferOnRandomSubbufs) {
  std::mt19937_64 rng(42);
  for (unsigned ls : {4u, 8u}) {
    SCOPED_TRACE(ls);
    for (int round = 0; round < 3000; ++round) {
      auto page = random_subbuf(rng, ls, round % 3 ? 4096 : 512);
      auto expect = kbuffer_walk(page, ls);
      ASSERT_FALSE(expect.empty());
      auto whole = parser_walk(page, ls, 1000);
      ASSERT_EQ(whole, expect) << "round " << round << ": " << first_difference(whole, expect);
      auto steps = parser_walk(page, ls, 1 + round % 7);
      ASSERT_EQ(steps, expect) << "round " << round << ", in steps: " << first_difference(steps, expect);
    }
  }
}

TEST(RbEvent, EachKindOfHeader) {
  SubbufBuilder b(8, 1000);
  b.event({1, 0, 0, 0}, 5)                               // ts 1005
      .padding(8, 7)                                     // a discarded event: +7
      .time_extend((3ull << 27) + 2)                     // +3 << 27, +2
      .event(std::vector<std::uint8_t>(130, 2), 1, true)  // type_len 0
      .time_stamp(77)                                    // absolute
      .event(std::vector<std::uint8_t>(112, 3), 0)       // type_len 28
      .padding(40);
  auto page = b.build();
  auto seen = parser_walk(page, 8, 1000);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (Seen{20, 4, 1005}));
  EXPECT_EQ(seen[1].ts, 1005 + 7 + (3ull << 27) + 2 + 1);
  EXPECT_EQ(seen[1].len, 132u);
  EXPECT_EQ(seen[2].ts, 77u);
  EXPECT_EQ(seen[2].len, 112u);
  EXPECT_EQ(seen, kbuffer_walk(page, 8));
  // An absolute time stamp keeps the top five bits of the clock.
  SubbufBuilder high(8, 0xf800000000000000ull | 5);
  high.time_stamp(9).event({1, 0, 0, 0});
  EXPECT_EQ(parser_walk(high.build(), 8, 1)[0].ts, 0xf800000000000009ull);
}

// A reader of the kernel's mapping re-reads the writer's sub-buffer as it
// grows: the walk goes on from its place (what it walked is garbage by then,
// so a walk from the first event would go astray), with the right time
// stamps, and delivers what a walk of the whole gives.
TEST(RbEvent, ReloadOfAGrowingSubbufGoesOnFromItsPlace) {
  std::mt19937_64 rng(9);
  for (unsigned ls : {4u, 8u}) {
    for (int round = 0; round < 500; ++round) {
      const auto pristine = random_subbuf(rng, ls, 4096);
      auto page = pristine;
      auto whole = kbuffer_walk(page, ls);
      std::uint64_t full = 0;
      std::memcpy(&full, page.data() + 8, ls);
      const std::uint32_t size = static_cast<std::uint32_t>(full & SubbufParser::kCommitMask);
      const std::size_t header = 8 + ls;
      // The commit moves through event boundaries the kernel could have had
      // (the ends of records), the flags set only at the end.
      std::vector<std::uint32_t> cuts;
      for (const auto& e : whole)
        if (rng() % 5 == 0) cuts.push_back(static_cast<std::uint32_t>(e.offset + e.len - header));
      auto set_commit = [&](std::uint64_t c) { std::memcpy(page.data() + 8, &c, ls); };
      SubbufParser p(ls);
      SeenSink sink;
      sink.base = page.data();
      std::uint32_t from = 0;
      set_commit(0);
      ASSERT_TRUE(p.load(page.data(), page.size()));
      for (std::uint32_t cut : cuts) {
        set_commit(cut);
        ASSERT_TRUE(p.reload(page.data(), page.size()));
        p.walk(sink, from, 1 + rng() % 50);
        p.walk(sink, from, 100000);
        ASSERT_EQ(from, cut);
        // Walked: no longer read. 0xff words are absolute time stamps, and
        // the records after them would go unseen.
        std::memset(page.data() + header, 0xff, cut);
      }
      set_commit(size);
      ASSERT_TRUE(p.reload(page.data(), page.size()));
      p.walk(sink, from, 100000);
      ASSERT_EQ(from, size);
      ASSERT_EQ(sink.seen, whole) << "round " << round << ": " << first_difference(sink.seen, whole);
      // The lost-events flags set: the sub-buffer is loaded afresh (and
      // reads its mark).
      page = pristine;
      ASSERT_TRUE(p.reload(page.data(), page.size()));
      std::int64_t mark = 0;
      if (full & SubbufParser::kMissedEvents) {
        mark = -1;
        if (full & SubbufParser::kMissedStored) {
          std::uint64_t n = 0;
          std::memcpy(&n, pristine.data() + header + size, ls);
          mark = static_cast<std::int64_t>(n);
        }
      }
      EXPECT_EQ(p.missed(), mark) << "round " << round;
    }
  }
}

// A header the walk cannot follow (here: an event running past the
// committed data, which the kernel's commit never cuts) spoils the rest of
// its sub-buffer, also once the commit has grown past it.
TEST(RbEvent, ABadHeaderSpoilsTheRestOfItsSubbuf) {
  SubbufBuilder b(8, 0);
  b.event({1, 0, 0, 0}, 1).event(std::vector<std::uint8_t>(40, 2), 1).event({3, 0, 0, 0}, 1);
  auto page = b.build();
  auto set_commit = [&](std::uint64_t c) { std::memcpy(page.data() + 8, &c, 8); };
  set_commit(8 + 20);  // the first event and part of the second
  SubbufParser p(8);
  SeenSink sink;
  sink.base = page.data();
  ASSERT_TRUE(p.load(page.data(), page.size()));
  std::uint32_t from = 0;
  EXPECT_EQ(p.walk(sink, from, 10), 1u);
  EXPECT_EQ(from, 28u);
  set_commit(b.data_size());
  ASSERT_TRUE(p.reload(page.data(), page.size()));
  EXPECT_EQ(p.walk(sink, from, 10), 0u);
  EXPECT_EQ(from, b.data_size());
  EXPECT_EQ(sink.seen.size(), 1u);
  ASSERT_TRUE(p.load(page.data(), page.size()));  // a load reads it afresh
  from = 0;
  EXPECT_EQ(p.walk(sink, from, 10), 3u);
}

}  // namespace
}  // namespace eventfs
