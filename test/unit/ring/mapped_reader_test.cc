// The mmap reader's side of the ring-buffer mapping protocol, against a
// scripted kernel: a meta page and sub-buffers in memory, and a GET_READER
// that plays the kernel's answers.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "ring/mapped_reader.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using testing::CollectSink;
using testing::SubbufBuilder;

// A drain that succeeded, or why it did not.
::testing::AssertionResult drained(const Result<std::size_t>& r) {
  if (r) return ::testing::AssertionSuccess() << *r << " records";
  return ::testing::AssertionFailure() << "errno " << r.code() << ": " << r.reason();
}

// A drain that failed with `code` and exactly `reason`.
::testing::AssertionResult failed_with(const Result<std::size_t>& r, int code, const std::string& reason) {
  if (r) return ::testing::AssertionFailure() << "delivered " << *r << " records instead of failing";
  if (r.code() != code || r.reason() != reason)
    return ::testing::AssertionFailure() << "errno " << r.code() << " \"" << r.reason() << "\", expected errno "
                                         << code << " \"" << reason << "\"";
  return ::testing::AssertionSuccess();
}

constexpr std::uint32_t kSubbuf = 1024;
constexpr std::uint32_t kNr = 4;

std::vector<std::uint8_t> ev(std::uint8_t tag, std::size_t len = 8) {
  std::vector<std::uint8_t> v(len, 0);
  v[0] = tag;
  return v;
}

struct FakeKernel {
  struct Step {
    std::uint32_t id;         // the reader after this GET_READER
    std::uint64_t overrun;    // the meta page's overrun after it
    int error = 0;            // or fail with this errno
    std::uint64_t beyond = 0; // entries in the ring behind the reader after it
  };
  FakeKernel() : data(kSubbuf * kNr, 0) {
    meta.meta_page_size = 4096;
    meta.meta_struct_len = sizeof meta;
    meta.subbuf_size = kSubbuf;
    meta.nr_subbufs = kNr;
  }
  void put(std::uint32_t id, const SubbufBuilder& b) {
    auto page = b.build();
    page.resize(kSubbuf);
    std::memcpy(data.data() + id * kSubbuf, page.data(), kSubbuf);
  }
  std::uint32_t commit(std::uint32_t id) const {
    std::uint64_t c;
    std::memcpy(&c, data.data() + id * kSubbuf + 8, 8);
    return static_cast<std::uint32_t>(c & ((1u << 27) - 1));
  }
  static Status get_reader(void* self) {
    auto* k = static_cast<FakeKernel*>(self);
    ++k->calls;
    if (k->script.empty()) {  // nothing new: the same reader, all read, the ring empty
      k->meta.reader.read = k->commit(k->meta.reader.id);
      k->meta.entries = k->meta.overrun + k->meta.read;
      return {};
    }
    Step s = k->script.front();
    k->script.pop_front();
    if (s.error) return fail(s.error, std::strerror(s.error));
    k->meta.reader.id = s.id;
    k->meta.reader.read = k->commit(s.id);
    k->meta.overrun = s.overrun;
    k->meta.entries = s.overrun + k->meta.read + s.beyond;
    return {};
  }
  MappedReader reader() { return MappedReader(&meta, data.data(), 8, &FakeKernel::get_reader, this); }

  ring_abi::TraceBufferMeta meta{};
  std::vector<std::uint8_t> data;
  std::deque<Step> script;
  int calls = 0;
};

std::string tags(const CollectSink& s) {
  std::string out;
  for (const auto& i : s.items) {
    if (i.lost)
      out += "[lost " + std::to_string(i.count) + (i.unknown ? "?" : "") + "]";
    else
      out += static_cast<char>(i.raw[0]);
  }
  return out;
}

TEST(MappedReader, WalksTheReaderThenSwapsAndSeesAppendsToTheReader) {
  FakeKernel k;
  SubbufBuilder p0(8, 100);
  p0.event(ev('a'), 1).event(ev('b'), 1);
  k.put(0, p0);
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "ab");
  // The writer appends to the reader sub-buffer (it is the tail page).
  p0.event(ev('c'), 1);
  k.put(0, p0);
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abc");
  EXPECT_EQ(sink.items[2].ts, 103u);
  // Then the kernel swaps in sub-buffer 2.
  SubbufBuilder p2(8, 1000);
  p2.event(ev('d')).event(ev('e'));
  k.put(2, p2);
  k.script.push_back({2, 0});
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abcde");
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abcde");
  RingStats s = r.stats();
  EXPECT_EQ(s.entries, 5u);
  EXPECT_EQ(s.lost, 0u);
}

// The writer filled the rest of our sub-buffer after our last GET_READER and
// went on: the next GET_READER only counts those events as read and keeps
// our sub-buffer, though whole sub-buffers wait behind it (the meta page
// says so). The reader walks the new events, asks again and goes on; where
// the ring behind is empty, it stops as before.
TEST(MappedReader, AReaderKeptOnlyToCountItsLastEventsIsNotACatchUp) {
  FakeKernel k;
  SubbufBuilder p0(8, 100);
  p0.event(ev('a'), 1);
  k.put(0, p0);
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_TRUE(drained(r.drain(sink, 100)));  // the writer is on sub-buffer 0: caught up
  EXPECT_EQ(tags(sink), "a");
  p0.event(ev('b'), 1);
  k.put(0, p0);
  SubbufBuilder p3(8, 500);
  p3.event(ev('c')).event(ev('d'));
  k.put(3, p3);
  k.script.push_back({0, 0, 0, 2});  // kept: 'b' counted as read; 2 entries behind
  k.script.push_back({3, 0});        // then the swap
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abcd");
  EXPECT_EQ(k.calls, 4);  // caught up; kept; swapped; caught up
  // Kept with nothing behind: caught up at once, as before.
  p3.event(ev('e'));
  k.put(3, p3);
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abcde");
  EXPECT_EQ(k.calls, 5);
}

// What the writer appends to the reader sub-buffer between the walk and
// the GET_READER that ends a drain, the kernel counts as read: its
// readiness no longer announces it. The reader says it is not settled
// until a drain has walked it.
TEST(MappedReader, IsNotSettledWhileTheReaderSubbufHasEventsItHasNotWalked) {
  FakeKernel k;
  SubbufBuilder p0(8, 100);
  p0.event(ev('a'), 1);
  k.put(0, p0);
  MappedReader r = k.reader();
  EXPECT_TRUE(r.settled());  // (nothing drained yet)
  CollectSink sink;
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_TRUE(r.settled());
  p0.event(ev('b'), 1);  // committed after the walk
  k.put(0, p0);
  EXPECT_FALSE(r.settled());
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "ab");
  EXPECT_TRUE(r.settled());
}

TEST(MappedReader, StartsWhereTheKernelSaysTheReaderWasRead) {
  FakeKernel k;
  SubbufBuilder p1(8, 0);
  p1.event(ev('a')).event(ev('b')).event(ev('c'));
  k.put(1, p1);
  k.meta.reader.id = 1;
  k.meta.reader.read = 12;  // 'a' (4-byte header + 8 bytes) was consumed before
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "bc");
}

TEST(MappedReader, StopsAtMaxAndResumesMidSubbuf) {
  FakeKernel k;
  SubbufBuilder p0(8, 0);
  for (char c = 'a'; c <= 'f'; ++c) p0.event(ev(static_cast<std::uint8_t>(c)));
  k.put(0, p0);
  MappedReader r = k.reader();
  CollectSink sink;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(drained(r.drain(sink, 2)));
  EXPECT_EQ(tags(sink), "abcdef");
  EXPECT_EQ(k.calls, 0);  // no GET_READER while the reader still had records
  ASSERT_TRUE(drained(r.drain(sink, 2)));
  EXPECT_EQ(tags(sink), "abcdef");
}

// A drain that stopped at its batch's end goes on from its place in the
// sub-buffer, not by walking it from the first event again: here the
// delivered events' headers are garbage by then (a walk from the start
// would run off the data after the first), and the rest still comes whole;
// so does what the writer appends to the sub-buffer after that.
TEST(MappedReader, ResumesMidSubbufFromItsPlace) {
  FakeKernel k;
  SubbufBuilder p0(8, 0);
  for (char c = 'a'; c <= 'f'; ++c) p0.event(ev(static_cast<std::uint8_t>(c)), 1);
  k.put(0, p0);
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_EQ(r.drain(sink, 2).value(), 2u);
  EXPECT_EQ(tags(sink), "ab");
  std::uint32_t huge = 28;  // type_len 28: a 112-byte event
  std::memcpy(k.data.data() + 16, &huge, 4);
  ASSERT_EQ(r.drain(sink, 2).value(), 2u);
  ASSERT_EQ(r.drain(sink, 2).value(), 2u);
  EXPECT_EQ(tags(sink), "abcdef");
  for (std::size_t i = 0; i < sink.items.size(); ++i) EXPECT_EQ(sink.items[i].ts, i + 1) << i;
  p0.event(ev('g'), 1);
  k.put(0, p0);
  std::memcpy(k.data.data() + 16, &huge, 4);
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "abcdefg");
  EXPECT_EQ(sink.items.back().ts, 7u);
}

TEST(MappedReader, LostMarksAndOverrunAreReportedInPlaceOnce) {
  FakeKernel k;
  SubbufBuilder p0(8, 0), p1(8, 10), p2(8, 20), p3(8, 30), p0b(8, 40);
  p0.event(ev('a'));
  p1.event(ev('b')).missed(5);   // 5 lost, count stored
  p2.event(ev('c')).missed(-1);  // lost, count not stored: 7 by the counter
  p3.event(ev('d'));             // unmarked growth of 4 seen at this swap...
  p0b.event(ev('e'));            // ...claimed by no mark at the next: reported
  k.put(0, p0);
  k.put(1, p1);
  k.put(2, p2);
  k.put(3, p3);
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  k.script = {{1, 5}, {2, 12}, {3, 16}};
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  k.put(0, p0b);
  k.script = {{0, 16}};
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "a[lost 5]b[lost 7?]cd[lost 4]e");
  RingStats s = r.stats();
  EXPECT_EQ(s.lost, 16u);
  EXPECT_EQ(s.overrun, 16u);
  EXPECT_EQ(s.unknown_lost, 1u);
  EXPECT_EQ(s.lost_reports, 3u);
  EXPECT_EQ(sink.items[1].ts, 10u);  // the time stamp of the sub-buffer after the gap
}

TEST(MappedReader, MarkCountingLossesBeforeOpenIsReportedAsIs) {
  FakeKernel k;
  k.meta.overrun = 100;  // lost before we opened
  SubbufBuilder p1(8, 0);
  p1.event(ev('a')).missed(30);
  k.put(1, p1);
  MappedReader r = k.reader();
  CollectSink sink;
  k.script = {{1, 100}};
  ASSERT_TRUE(drained(r.drain(sink, 100)));
  EXPECT_EQ(tags(sink), "[lost 30]a");
  EXPECT_EQ(r.stats().overrun, 0u);
}

// One reader sub-buffer the kernel marked "events lost, count not stored",
// the meta page's overrun counter at `counter`, losses counted from `base`
// (count_losses_from): what one drain delivers.
struct UncountedLossDrain {
  UncountedLossDrain(std::uint64_t counter, std::uint64_t base) {
    FakeKernel k;
    k.meta.overrun = counter;
    SubbufBuilder p0(8, 0);
    p0.event(ev('a')).missed(-1);
    k.put(0, p0);
    MappedReader r = k.reader();
    r.count_losses_from(base);
    CollectSink sink;
    got = r.drain(sink, 100).value();
    delivered = tags(sink);
    stats = r.stats();
  }
  std::size_t got;
  std::string delivered;
  RingStats stats;
};

// The kernel overwrote events while no stream was open, and the first
// reader sub-buffer has no room for the count: with the loss baseline where
// the previous reader stopped, the count comes from the overrun counter
// instead of being 0.
TEST(MappedReader, UncountedLossBeforeTheFirstDrainIsCountedFromTheBaseline) {
  UncountedLossDrain d(100, 60);  // 40 lost since the previous reader stopped at 60
  EXPECT_EQ(d.got, 1u);
  EXPECT_EQ(d.delivered, "[lost 40?]a");
  EXPECT_EQ(d.stats.overrun, 40u);
  EXPECT_EQ(d.stats.overrun_counter, 100u);
}

// The counter was reset since (the ring was cleared, as writing the
// instance's trace file does): what it counts now was overwritten after the
// reset, while no stream was open.
TEST(MappedReader, ALossBaselineAboveTheCounterCountsFromTheReset) {
  UncountedLossDrain d(5, 60);
  EXPECT_EQ(d.got, 1u);
  EXPECT_EQ(d.delivered, "[lost 5?]a");
  EXPECT_EQ(d.stats.overrun, 5u);
}

TEST(MappedReader, GetReaderErrorIsReturned) {
  FakeKernel k;
  MappedReader r = k.reader();
  CollectSink sink;
  k.script = {{0, 0, EBUSY}};
  EXPECT_TRUE(failed_with(r.drain(sink, 100), EBUSY, "TRACE_MMAP_IOCTL_GET_READER: Device or resource busy"));
}

TEST(MappedReader, BadReaderIdIsAnError) {
  FakeKernel k;
  k.meta.reader.id = kNr;
  MappedReader r = k.reader();
  CollectSink sink;
  EXPECT_TRUE(failed_with(r.drain(sink, 100), EIO, "the meta page names sub-buffer 4 as the reader's, of 4"));
}

// A sub-buffer whose header claims more events than it can hold is refused,
// and the reason names it (the kernel's own never do this).
TEST(MappedReader, ASubbufItsHeaderDoesNotFitIsAnErrorThatSaysWhy) {
  FakeKernel k;
  SubbufBuilder p1(8, 100);
  p1.event(ev('a'));
  k.put(1, p1);
  const std::uint64_t commit = kSubbuf;  // (the events would run past the sub-buffer's end)
  std::memcpy(k.data.data() + 1 * kSubbuf + 8, &commit, 8);
  k.meta.reader.id = 1;
  MappedReader r = k.reader();
  CollectSink sink;
  EXPECT_TRUE(failed_with(r.drain(sink, 100), EIO, "sub-buffer 1: its header says 1024 bytes of events, and it holds 1008"));
  EXPECT_TRUE(sink.items.empty());
}

}  // namespace
}  // namespace eventfs
