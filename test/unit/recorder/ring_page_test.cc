// The trace.dat pages eventfs-record writes (recorder/ring_page.h), walked by
// libtraceevent's kbuffer (what trace-cmd and KernelShark read them with) and
// by eventfs's own sub-buffer walk: the same events, data and time stamps,
// time extends where a delta passes 27 bits, the missed-events mark and its
// stored count.
#include <gtest/gtest.h>

extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include <cstring>
#include <random>
#include <vector>

#include "recorder/ring_page.h"
#include "support/walk_compare.h"

namespace eventfs::recorder {
namespace {

struct Put {
  std::uint64_t ts;
  std::vector<unsigned char> data;
};

struct Walked {
  std::vector<Put> events;
  long long missed = 0;
};

Walked kbuffer_read(const std::vector<unsigned char>& page) {
  kbuffer* kb = kbuffer_alloc(sizeof(long) == 4 ? KBUFFER_LSIZE_4 : KBUFFER_LSIZE_8, KBUFFER_ENDIAN_SAME_AS_HOST);
  Walked w;
  std::vector<unsigned char> copy = page;
  if (kbuffer_load_subbuffer(kb, copy.data()) == 0) {
    w.missed = kbuffer_missed_events(kb);
    unsigned long long ts = 0;
    for (void* e = kbuffer_read_event(kb, &ts); e; e = kbuffer_next_event(kb, &ts)) {
      const auto* p = static_cast<const unsigned char*>(e);
      w.events.push_back({ts, std::vector<unsigned char>(p, p + kbuffer_event_size(kb))});
    }
  }
  kbuffer_free(kb);
  return w;
}

std::vector<unsigned char> bytes_of(std::mt19937& rng, std::size_t len) {
  std::vector<unsigned char> v(len);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(RecordRingPage, RandomEventsReadBackByKbufferAndEventfsWalkAlike) {
  std::mt19937 rng(7);
  for (std::size_t page_size : {4096u, 8192u, 65536u}) {
    std::uint64_t ts = 1000;
    RingPage page(page_size);
    std::vector<Put> put;
    int pages = 0;
    auto check = [&] {
      const auto& bytes = page.finish();
      ASSERT_EQ(bytes.size(), page_size);
      Walked w = kbuffer_read(bytes);
      ASSERT_EQ(w.events.size(), put.size()) << "page " << pages;
      for (std::size_t i = 0; i < put.size(); ++i) {
        EXPECT_EQ(w.events[i].ts, put[i].ts) << "event " << i;
        // kbuffer gives the length rounded up to 4: the data is its start.
        ASSERT_GE(w.events[i].data.size(), put[i].data.size());
        EXPECT_EQ(0, std::memcmp(w.events[i].data.data(), put[i].data.data(), put[i].data.size())) << "event " << i;
      }
      EXPECT_EQ(w.missed, 0);
      const auto k = eventfs::testing::kbuffer_walk(bytes, sizeof(long));
      const auto ours = eventfs::testing::parser_walk(bytes, sizeof(long), 3);
      EXPECT_EQ(ours, k) << eventfs::testing::first_difference(ours, k);
      page.reset();
      put.clear();
      ++pages;
    };
    for (int i = 0; i < 3000; ++i) {
      const std::size_t len = 8 + rng() % 200;
      // Mostly small steps, some past 27 bits, some equal times.
      const std::uint64_t r = rng() % 100;
      ts += r < 5 ? (1ull << 27) + rng() % (1ull << 30) : r < 10 ? 0 : rng() % 5000;
      auto data = bytes_of(rng, len);
      if (!page.add(ts, data.data(), data.size())) {
        check();
        ASSERT_TRUE(page.add(ts, data.data(), data.size()));
      }
      put.push_back({ts, data});
    }
    check();
    EXPECT_GT(pages, 3) << page_size;
  }
}

TEST(RecordRingPage, ALossMarksThePageAndStoresItsCount) {
  RingPage page(4096);
  page.set_missed(500, 1234);
  const unsigned char data[12] = {1, 2, 3};
  ASSERT_TRUE(page.add(600, data, sizeof data));
  Walked w = kbuffer_read(page.finish());
  EXPECT_EQ(w.missed, 1234);
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.events[0].ts, 600u);

  // A loss with no event after it: a page of its own.
  page.reset();
  page.set_missed(700, 9);
  EXPECT_FALSE(page.empty());
  w = kbuffer_read(page.finish());
  EXPECT_EQ(w.missed, 9);
  EXPECT_TRUE(w.events.empty());
}

TEST(RecordRingPage, AFullPageSaysSoAndAnEventTooLargeNeverFits) {
  RingPage page(4096);
  std::vector<unsigned char> big(RingPage::max_data(4096), 0xab);
  // The largest event fits a page whatever its delta, with a loss's count.
  page.set_missed(0, 3);
  ASSERT_TRUE(page.add(1ull << 40, big.data(), big.size()));
  EXPECT_FALSE(page.add((1ull << 40) + 1, big.data(), 64));
  page.reset();
  std::vector<unsigned char> too_big(4096, 0);
  EXPECT_FALSE(page.add(1, too_big.data(), too_big.size()));
  EXPECT_TRUE(page.empty());
}

}  // namespace
}  // namespace eventfs::recorder
