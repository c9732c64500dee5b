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

// A writer that has left the reader sub-buffer, with less than a
// sub-buffer's worth of events behind it when the reader last asked: the
// next sub-buffer is the writer's, holding a few events. A drain that
// delivered records does not swap it in (on its own, a GET_READER would
// hand it over nearly empty); the next drain does, first thing, whatever it
// holds by then. Every record once, in order.
TEST(MappedReader, TheWritersFewEventsAreSwappedInAtTheNextDrainNotAtTheCatchUp) {
  FakeKernel k;
  k.meta.reader.id = 3;  // (empty)
  SubbufBuilder p0(8, 100, kSubbuf);
  for (int i = 0; i < 84; ++i) p0.event(ev('a'), 1);  // 84 x 12 bytes: the sub-buffer is full
  k.put(0, p0);
  SubbufBuilder p1(8, 500, kSubbuf);
  p1.event(ev('b')).event(ev('c'));
  k.put(1, p1);
  k.script.push_back({0, 0, 0, 2});  // sub-buffer 0 swapped in; 2 events behind it
  k.script.push_back({1, 0});        // (what a swap then would give)
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_EQ(r.drain(sink, 1000).value(), 84u);
  EXPECT_EQ(k.calls, 1);
  // The writer goes on meanwhile.
  p1.event(ev('d'));
  k.put(1, p1);
  ASSERT_EQ(r.drain(sink, 1000).value(), 3u);
  EXPECT_EQ(tags(sink), std::string(84, 'a') + "bcd");
  EXPECT_EQ(k.calls, 3);  // swapped; caught up on the writer's sub-buffer
  EXPECT_EQ(r.stats().entries, 87u);
}

// With a sub-buffer's worth (or more) behind, the next sub-buffer is full:
// swapped in at once.
TEST(MappedReader, ASubbufsWorthBehindIsSwappedInAtOnce) {
  FakeKernel k;
  k.meta.reader.id = 3;
  SubbufBuilder p0(8, 100, kSubbuf), p1(8, 500, kSubbuf);
  for (int i = 0; i < 84; ++i) p0.event(ev('a'), 1);
  for (int i = 0; i < 84; ++i) p1.event(ev('b'), 1);
  k.put(0, p0);
  k.put(1, p1);
  k.script.push_back({0, 0, 0, 84});
  k.script.push_back({1, 0, 0, 0});
  MappedReader r = k.reader();
  CollectSink sink;
  ASSERT_EQ(r.drain(sink, 1000).value(), 168u);
  EXPECT_EQ(k.calls, 2);  // two swaps (the writer left sub-buffer 1 too, with nothing behind it: the next drain asks)
  ASSERT_EQ(r.drain(sink, 1000).value(), 0u);
  EXPECT_EQ(k.calls, 3);
  EXPECT_EQ(tags(sink), std::string(84, 'a') + std::string(84, 'b'));
}

// The kernel's side of the protocol as Linux 6.10 to 6.18 play it
// (ring_buffer_map_get_reader), over sub-buffers of 12-byte events: a
// writer appending to the tail sub-buffer and moving on to the next when
// it is full; GET_READER counting the reader sub-buffer's events as read
// if it has any not counted yet, else swapping in the oldest sub-buffer
// (the writer's own too) and counting all of its events as read, else (the
// writer on the reader sub-buffer, or nothing written) keeping it. The
// reader never falls a ring behind here: no overrun.
class RingModel {
 public:
  static constexpr std::uint32_t kNr = 8, kEvent = 12, kCapacity = kSubbuf - 16;

  RingModel() : data_(kSubbuf * kNr, 0) {
    meta_.meta_page_size = 4096;
    meta_.meta_struct_len = sizeof meta_;
    meta_.subbuf_size = kSubbuf;
    meta_.nr_subbufs = kNr;
    meta_.reader.id = kNr - 1;  // sub-buffer kNr - 1 is the reader's; the others the ring's
    for (std::uint32_t i = 0; i + 1 < kNr; ++i) ring_.push_back(i);
  }
  MappedReader reader() { return MappedReader(&meta_, data_.data(), 8, &RingModel::get_reader, this); }

  // Appends one event carrying sequence number `seq`.
  void write(std::uint32_t seq) {
    std::uint32_t page = writer_on_reader_ ? meta_.reader.id : ring_[tail_];
    if (commit(page) + kEvent > kCapacity) {
      if (writer_on_reader_) {  // on to the sub-buffer after the reader's place
        writer_on_reader_ = false;
        tail_ = head_;
      } else {
        tail_ = (tail_ + 1) % ring_.size();
        EXPECT_NE(tail_, head_) << "the model's ring overran";
      }
      page = ring_[tail_];
      std::memset(data_.data() + page * kSubbuf, 0, kSubbuf);
    }
    std::uint8_t* p = data_.data() + page * kSubbuf;
    const std::uint32_t at = commit(page), header = 2 | (1u << 5);  // 8 bytes of data, time delta 1
    std::memcpy(p + 16 + at, &header, 4);
    std::memcpy(p + 16 + at + 4, &seq, 4);
    const std::uint64_t c = at + kEvent;
    std::memcpy(p + 8, &c, 8);
    ++written_;
  }

  int calls = 0;
  // Events on each sub-buffer GET_READER handed over, when it did.
  std::vector<std::uint32_t> handed_over;

 private:
  std::uint32_t commit(std::uint32_t page) const {
    std::uint64_t c;
    std::memcpy(&c, data_.data() + page * kSubbuf + 8, 8);
    return static_cast<std::uint32_t>(c);
  }
  std::uint64_t events(std::uint32_t page, std::uint32_t from) const { return (commit(page) - from) / kEvent; }
  bool empty() const {
    if (reader_read_ < commit(meta_.reader.id)) return false;
    if (writer_on_reader_) return true;
    for (std::size_t i = head_;; i = (i + 1) % ring_.size()) {
      if (commit(ring_[i]) != 0) return false;
      if (i == tail_) return true;
    }
  }
  static Status get_reader(void* self) {
    auto* m = static_cast<RingModel*>(self);
    ++m->calls;
    for (;;) {
      if (m->empty()) break;
      const std::uint32_t reader = m->meta_.reader.id;
      if (m->reader_read_ < m->commit(reader)) {
        m->read_ += m->events(reader, m->reader_read_);
        m->reader_read_ = m->commit(reader);
        break;
      }
      // Swap: the reader sub-buffer takes the oldest one's place in the ring.
      const std::uint32_t oldest = m->ring_[m->head_];
      std::memset(m->data_.data() + reader * kSubbuf, 0, kSubbuf);
      m->ring_[m->head_] = reader;
      if (m->head_ == m->tail_) m->writer_on_reader_ = true;
      m->head_ = (m->head_ + 1) % m->ring_.size();
      m->meta_.reader.id = oldest;
      m->reader_read_ = 0;
      m->handed_over.push_back(static_cast<std::uint32_t>(m->events(oldest, 0)));
    }
    m->meta_.reader.read = m->reader_read_;
    m->meta_.entries = m->written_;
    m->meta_.read = m->read_;
    return {};
  }

  ring_abi::TraceBufferMeta meta_{};
  std::vector<std::uint8_t> data_;
  std::vector<std::uint32_t> ring_;  // sub-buffer ids in ring order
  std::size_t head_ = 0;             // the oldest (the next to be swapped in)
  std::size_t tail_ = 0;             // the writer's, unless it writes on the reader's
  bool writer_on_reader_ = false;
  std::uint32_t reader_read_ = 0;
  std::uint64_t written_ = 0, read_ = 0;
};

// A storm: between two drains the writer appends a sub-buffer's worth and a
// half. Each GET_READER hands over a full sub-buffer: none of the writer's
// part-filled ones, whose events would then each cost a GET_READER of their
// own; once the writer stops, the next drains deliver the rest. Every record
// once, in order.
TEST(MappedReader, InAStormEveryGetReaderHandsOverAFullSubbuf) {
  RingModel k;
  MappedReader r = k.reader();
  CollectSink sink;
  std::uint32_t seq = 0;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 126; ++i) k.write(seq++);
    ASSERT_TRUE(drained(r.drain(sink, 100000)));
  }
  const std::size_t swaps = k.handed_over.size();
  for (std::size_t i = 0; i < swaps; ++i) EXPECT_EQ(k.handed_over[i], 84u) << "swap " << i;
  EXPECT_EQ(k.calls, static_cast<int>(swaps));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(drained(r.drain(sink, 100000)));
  ASSERT_EQ(sink.items.size(), seq);
  for (std::uint32_t i = 0; i < seq; ++i) {
    std::uint32_t got;
    std::memcpy(&got, sink.items[i].raw.data(), 4);
    ASSERT_EQ(got, i) << "record " << i;
  }
  EXPECT_EQ(r.stats().lost, 0u);
}

// The reader sub-buffer was the writer's when it was swapped in; the
// writer filled it and went on. The drain that delivers its last events
// has the kernel count them as read before it leaves the next swap to the
// next drain: a reader opened after this one closed (the next stream
// session) starts where the kernel says, after them. Every record once.
TEST(MappedReader, AReaderOpenedAfterTheSwapWaitedDeliversNothingTwice) {
  RingModel k;
  CollectSink sink;
  std::uint32_t seq = 0;
  {
    MappedReader r = k.reader();
    for (int i = 0; i < 10; ++i) k.write(seq++);
    ASSERT_EQ(r.drain(sink, 1000).value(), 10u);  // the writer's sub-buffer, swapped in
    for (int i = 0; i < 79; ++i) k.write(seq++);  // fills it (84), then 5 on the next
    ASSERT_EQ(r.drain(sink, 1000).value(), 74u);
  }
  MappedReader again = k.reader();
  ASSERT_EQ(again.drain(sink, 1000).value(), 5u);
  ASSERT_EQ(sink.items.size(), seq);
  for (std::uint32_t i = 0; i < seq; ++i) {
    std::uint32_t got;
    std::memcpy(&got, sink.items[i].raw.data(), 4);
    ASSERT_EQ(got, i) << "record " << i;
  }
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
