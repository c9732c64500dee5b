// The per-CPU record queue: FIFO order, and what a reader that fell behind
// is told when the queue drops the oldest records to make room.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "eventfs/record.h"
#include "projection/projection.h"
#include "stream/record_queue.h"

namespace eventfs {
namespace {

// A plain record of id `id` with an 8-byte payload.
std::vector<std::uint8_t> record(std::uint32_t id, std::uint64_t ts) {
  std::vector<std::uint8_t> r(EVENTFS_RECORD_SIZE(8), 0);
  eventfs_record_header h{};
  h.size = static_cast<std::uint32_t>(r.size());
  h.id = id;
  h.timestamp = ts;
  h.version = EVENTFS_RECORD_VERSION;
  std::memcpy(r.data(), &h, sizeof h);
  return r;
}

std::vector<std::uint8_t> lost(std::uint64_t ts, std::uint64_t count, bool unknown) {
  std::vector<std::uint8_t> r(lost_record_size());
  write_lost_record(ts, count, 0, unknown, r.data());
  return r;
}

std::uint32_t front_id(const RecordQueue& q) {
  eventfs_record_header h;
  std::memcpy(&h, q.front(), sizeof h);
  return h.id;
}

TEST(RecordQueue, KeepsOrderAndPids) {
  RecordQueue q(1 << 20);
  for (std::uint32_t i = 1; i <= 3; ++i) q.push(static_cast<std::int32_t>(100 + i), record(i, i * 10).data());
  for (std::uint32_t i = 1; i <= 3; ++i) {
    ASSERT_FALSE(q.empty());
    EXPECT_EQ(front_id(q), i);
    EXPECT_EQ(q.front_pid(), static_cast<std::int32_t>(100 + i));
    EXPECT_EQ(q.front_ts(), i * 10);
    q.pop();
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.take_dropped().count, 0u);
}

TEST(RecordQueue, DroppedRecordsAreCountedOnce) {
  const std::size_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(4 * one);
  for (std::uint32_t i = 1; i <= 6; ++i) q.push(0, record(i, i).data());
  EXPECT_EQ(q.count(), 4u);
  EXPECT_EQ(front_id(q), 3u) << "the oldest go first";
  RecordQueue::Dropped d = q.take_dropped();
  EXPECT_EQ(d.count, 2u);
  EXPECT_FALSE(d.unknown);
  EXPECT_EQ(q.take_dropped().count, 0u) << "reported once";
  EXPECT_EQ(q.dropped_total(), 2u);
}

// A dropped kernel lost-events record still counts what the kernel lost.
TEST(RecordQueue, ADroppedLostEventsRecordKeepsItsCount) {
  const std::size_t big = lost_record_size();
  RecordQueue q(2 * big);
  q.push(0, lost(1, 500, false).data());
  q.push(0, record(7, 2).data());
  q.push(0, lost(3, 0, true).data());
  q.push(0, record(8, 4).data());
  q.push(0, record(9, 5).data());  // by now the two lost records and record 7 are gone
  RecordQueue::Dropped d = q.take_dropped();
  EXPECT_EQ(d.count, 501u) << "500 lost by the kernel, and record 7";
  EXPECT_TRUE(d.unknown) << "the second lost record had no count";
  EXPECT_EQ(q.dropped_total(), 1u) << "only eventfs's own drops";
  ASSERT_EQ(q.count(), 2u);
  EXPECT_EQ(front_id(q), 8u);
}

TEST(RecordQueue, ADroppedUncountedLossMakesTheReportUncounted) {
  const std::size_t one = lost_record_size();
  RecordQueue q(one);
  q.push(0, lost(1, 3, true).data());
  q.push(0, record(1, 2).data());
  RecordQueue::Dropped d = q.take_dropped();
  EXPECT_EQ(d.count, 3u);
  EXPECT_TRUE(d.unknown);
  EXPECT_EQ(q.dropped_total(), 0u);
}

// take_into: whole records, in order, with their bytes, up to the limit;
// one larger than the limit only when asked for at least one.
TEST(RecordQueue, TakeIntoTakesWholeRecordsUpToTheLimit) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(1 << 20);
  for (std::uint32_t i = 1; i <= 5; ++i) q.push(static_cast<std::int32_t>(i), record(i, i).data());
  std::string out = "x";
  EXPECT_EQ(q.take_into(out, 2 * one + one / 2, false), 2u);
  ASSERT_EQ(out.size(), 1 + 2 * one);
  EXPECT_EQ(out.substr(1), std::string(reinterpret_cast<const char*>(record(1, 1).data()), one) +
                               std::string(reinterpret_cast<const char*>(record(2, 2).data()), one));
  EXPECT_EQ(q.count(), 3u);
  EXPECT_EQ(q.front_pid(), 3);
  EXPECT_EQ(q.take_into(out, one - 1, false), 0u) << "no room for one record";
  EXPECT_EQ(q.take_into(out, one - 1, true), 1u) << "at least one, asked for";
  EXPECT_EQ(front_id(q), 4u);
  EXPECT_EQ(q.take_into(out, 1 << 20, false), 2u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(out.size(), 1 + 5 * one);
}

// The records a reader takes, in place: two runs when they go on at the
// front of the buffer, and still queued until pop_front().
TEST(RecordQueue, FrontRunsAreTheRecordsInPlaceAcrossTheWrap) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(5 * one + one / 2);  // five records, then the sixth goes to the front
  for (std::uint32_t i = 1; i <= 5; ++i) q.push(static_cast<std::int32_t>(i), record(i, i).data());
  q.pop();
  q.pop();
  q.push(6, record(6, 6).data());
  RecordQueue::Runs r = q.front_runs(1 << 20, false);
  ASSERT_EQ(r.n, 2);
  EXPECT_EQ(r.records[0], 3u);
  EXPECT_EQ(r.bytes[0], 3u * one);
  EXPECT_EQ(r.records[1], 1u);
  EXPECT_EQ(r.bytes[1], one);
  EXPECT_EQ(std::memcmp(r.at[0], record(3, 3).data(), one), 0);
  EXPECT_EQ(std::memcmp(r.at[1], record(6, 6).data(), one), 0);
  EXPECT_EQ(q.count(), 4u) << "nothing removed yet";
  RecordQueue::Runs part = q.front_runs(2 * one + 1, false);
  ASSERT_EQ(part.n, 1);
  EXPECT_EQ(part.records[0], 2u);
  q.pop_front(part);
  EXPECT_EQ(front_id(q), 5u);
  q.pop_front(q.front_runs(1 << 20, false));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.front_runs(1 << 20, true).n, 0);
}

// A lease removes its records at once but keeps their bytes until unpin():
// the producer never writes over them (a record with no other room is
// counted as dropped), one lease at a time, and the buffers stay.
TEST(RecordQueue, ALeasesBytesStayPutUntilUnpinned) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(4 * one);
  for (std::uint32_t i = 1; i <= 3; ++i) q.push(static_cast<std::int32_t>(i), record(i, i).data());
  RecordQueue::Runs l = q.lease(2 * one);
  ASSERT_EQ(l.n, 1);
  EXPECT_EQ(l.records[0], 2u);
  EXPECT_EQ(q.count(), 1u) << "leased records are taken";
  EXPECT_EQ(front_id(q), 3u);
  EXPECT_EQ(q.lease(1 << 20).n, 0) << "one lease at a time";
  const std::vector<std::uint8_t> lent(l.at[0], l.at[0] + l.bytes[0]);
  // Room for one more at the back; the next two would need the leased bytes.
  for (std::uint32_t i = 4; i <= 6; ++i) q.push(0, record(i, i).data());
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), lent) << "a leased byte was written";
  EXPECT_EQ(q.count(), 2u);
  EXPECT_EQ(q.dropped_total(), 2u);
  EXPECT_FALSE(q.has_dropped()) << "the two dropped come after the two queued";
  EXPECT_FALSE(q.release()) << "never free a leased buffer";
  std::string out;
  EXPECT_EQ(q.take_into(out, 1 << 20, false), 2u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.take_dropped().count, 2u) << "now reported, after the records before them";
  EXPECT_FALSE(q.release());
  // Empty but leased: new records go after the lease, not over it at the front.
  q.push(7, record(7, 7).data());
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), lent);
  q.unpin();
  EXPECT_FALSE(q.pinned());
  for (std::uint32_t i = 8; i <= 10; ++i) q.push(0, record(i, i).data());
  EXPECT_EQ(q.count(), 4u) << "the lease's room is free again";
  EXPECT_EQ(q.take_dropped().count, 0u);
}

// A lease across the end of the buffer pins both of its runs.
TEST(RecordQueue, ALeaseAcrossTheWrapPinsBothRuns) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(5 * one + one / 2);
  for (std::uint32_t i = 1; i <= 5; ++i) q.push(0, record(i, i).data());
  q.pop();
  q.pop();
  q.push(0, record(6, 6).data());  // at the front
  RecordQueue::Runs l = q.lease(1 << 20);
  ASSERT_EQ(l.n, 2);
  EXPECT_TRUE(q.empty());
  const std::vector<std::uint8_t> tail(l.at[0], l.at[0] + l.bytes[0]), head(l.at[1], l.at[1] + l.bytes[1]);
  for (std::uint32_t i = 7; i <= 12; ++i) q.push(0, record(i, i).data());
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), tail);
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[1], l.at[1] + l.bytes[1]), head);
  EXPECT_EQ(q.count() + q.dropped_total(), 6u) << "each new record queued or counted";
  std::string out;
  q.take_into(out, 1 << 20, false);
  EXPECT_TRUE(q.empty());
  q.unpin();
  for (std::uint32_t i = 13; i <= 17; ++i) q.push(0, record(i, i).data());
  EXPECT_EQ(q.count(), 5u);
}

// Empty, with a lease's bytes up to the end of the buffer: the next record
// starts again at the front, and is the front.
TEST(RecordQueue, ARecordAfterALeaseThatEndsTheBufferIsTheFront) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(4 * one);
  for (std::uint32_t i = 1; i <= 4; ++i) q.push(0, record(i, i).data());
  q.pop();
  ASSERT_EQ(q.lease(1 << 20).n, 1);  // records 2-4, up to the end
  q.push(5, record(5, 5).data());
  ASSERT_EQ(q.count(), 1u);
  EXPECT_EQ(front_id(q), 5u);
  EXPECT_EQ(q.front_ts(), 5u);
  q.unpin();
  for (std::uint32_t i = 6; i <= 8; ++i) q.push(0, record(i, i).data());
  for (std::uint32_t i = 5; i <= 8; ++i, q.pop()) EXPECT_EQ(front_id(q), i);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.has_dropped());
}

// Records of many sizes through a small queue, wrapping around its end
// again and again, taken out in bursts: what comes out is in order, whole,
// and what went missing was reported as dropped.
// `smallest_record`: what the queue is told its smallest record will be;
// at 80, above 7 of the 12 record sizes here, the ring of their pids and
// sizes fills before the bytes do, at times.
void wrap_around(std::size_t smallest_record) {
  RecordQueue q(1000, smallest_record);
  std::uint32_t next_in = 1, next_out = 1;
  std::uint64_t dropped = 0, taken = 0;
  unsigned seed = 12345;
  for (int round = 0; round < 2000; ++round) {
    seed = seed * 1103515245u + 12345u;
    int pushes = static_cast<int>(seed >> 16) % 7;
    for (int i = 0; i < pushes; ++i, ++next_in) {
      std::uint32_t payload = 8 * (1 + (next_in * 7) % 12);
      std::vector<std::uint8_t> r(EVENTFS_RECORD_SIZE(payload), static_cast<std::uint8_t>(next_in));
      eventfs_record_header h{static_cast<std::uint32_t>(r.size()), next_in, next_in, 0, EVENTFS_RECORD_VERSION, 0};
      std::memcpy(r.data(), &h, sizeof h);
      q.push(static_cast<std::int32_t>(next_in), r.data());
    }
    int pops = static_cast<int>(seed >> 20) % 6;
    dropped += q.take_dropped().count;
    if (round % 3 == 0) {  // in bulk, as a binary stream reader takes them
      std::string out;
      std::size_t limit = (seed >> 8) % 400, n = q.take_into(out, limit, round % 2 == 0);
      std::size_t at = 0;
      for (std::size_t i = 0; i < n; ++i) {
        eventfs_record_header h;
        ASSERT_LE(at + sizeof h, out.size());
        std::memcpy(&h, out.data() + at, sizeof h);
        ASSERT_GE(h.id, next_out) << "out of order";
        ASSERT_EQ(h.size, EVENTFS_RECORD_SIZE(8 * (1 + (h.id * 7) % 12)));
        for (std::uint32_t b = sizeof h; b < h.size; ++b)
          ASSERT_EQ(static_cast<std::uint8_t>(out[at + b]), static_cast<std::uint8_t>(h.id)) << "record " << h.id;
        next_out = h.id + 1;
        at += h.size;
        ++taken;
      }
      ASSERT_EQ(at, out.size()) << "whole records only";
      if (n > 1 || round % 2 != 0) {
        ASSERT_LE(out.size(), limit);
      }
      continue;
    }
    for (int i = 0; i < pops && !q.empty(); ++i) {
      eventfs_record_header h;
      std::memcpy(&h, q.front(), sizeof h);
      ASSERT_GT(h.id, 0u);
      ASSERT_GE(h.id, next_out) << "out of order";
      ASSERT_EQ(q.front_size(), h.size);
      ASSERT_EQ(q.front_pid(), static_cast<std::int32_t>(h.id));
      ASSERT_EQ(h.size, EVENTFS_RECORD_SIZE(8 * (1 + (h.id * 7) % 12)));
      for (std::uint32_t b = sizeof h; b < h.size; ++b)
        ASSERT_EQ(q.front()[b], static_cast<std::uint8_t>(h.id)) << "record " << h.id << " mangled";
      next_out = h.id + 1;
      ++taken;
      q.pop();
    }
  }
  while (!q.empty()) {
    eventfs_record_header h;
    std::memcpy(&h, q.front(), sizeof h);
    ASSERT_GE(h.id, next_out) << "out of order";
    next_out = h.id + 1;
    ++taken;
    q.pop();
  }
  dropped += q.take_dropped().count;
  EXPECT_EQ(next_out, next_in) << "the last record came out";
  EXPECT_EQ(taken + dropped, next_in - 1u) << "every record was taken or reported dropped";
  EXPECT_EQ(dropped, q.dropped_total());
  EXPECT_GT(dropped, 0u) << "the test never made the queue drop";
}

TEST(RecordQueue, WrapsAroundWithoutLosingOrMangling) { wrap_around(16); }
TEST(RecordQueue, WrapsAroundWithoutLosingOrManglingWhenRecordsComeSmallerThanItWasTold) { wrap_around(80); }

// The queue sizes the ring of its records' pids and sizes for its smallest
// record; when smaller ones come, that ring is full first, and the oldest
// go as when the bytes are full: counted, in order.
TEST(RecordQueue, RecordsSmallerThanItWasToldDropTheOldestWhenTheirCountIsFull) {
  const std::size_t one = EVENTFS_RECORD_SIZE(8);  // 24 bytes
  RecordQueue q(8 * one, 2 * one);                  // room for 8 records' bytes, 5 records' sizes
  for (std::uint32_t i = 1; i <= 8; ++i) q.push(static_cast<std::int32_t>(i), record(i, i).data());
  EXPECT_EQ(q.count(), 5u);
  EXPECT_EQ(q.take_dropped().count, 3u);
  EXPECT_EQ(q.dropped_total(), 3u);
  for (std::uint32_t round = 0; round < 3; ++round) {  // and around the ring again, in order
    for (std::uint32_t i = 4 + round * 5; i < 9 + round * 5; ++i) {
      ASSERT_FALSE(q.empty());
      EXPECT_EQ(front_id(q), i);
      EXPECT_EQ(q.front_pid(), static_cast<std::int32_t>(i));
      EXPECT_EQ(q.front_size(), one);
      q.pop();
    }
    EXPECT_TRUE(q.empty());
    for (std::uint32_t i = 9 + round * 5; i < 14 + round * 5; ++i) q.push(static_cast<std::int32_t>(i), record(i, i).data());
    EXPECT_EQ(q.take_dropped().count, 0u) << "five fit";
  }
}

// Memory made apart from the queue (without its lock) goes to a queue of
// its size that has none, and to no other: a queue's records stay where
// they are.
TEST(RecordQueue, AdoptsPrefaultedMemoryOnlyWhenItHasNoneOfItsOwn) {
  RecordQueue q(1 << 16), other(1 << 17);
  EXPECT_FALSE(q.has_memory());
  q.adopt(other.prefaulted());
  EXPECT_FALSE(q.has_memory()) << "took memory made for another size";
  q.adopt(q.prefaulted());
  ASSERT_TRUE(q.has_memory());
  std::uint8_t* at = q.reserve(7, EVENTFS_RECORD_SIZE(8), 10);
  ASSERT_NE(at, nullptr);
  std::memcpy(at, record(1, 10).data(), EVENTFS_RECORD_SIZE(8));
  q.adopt(q.prefaulted());  // has memory: this is freed
  ASSERT_FALSE(q.empty());
  EXPECT_EQ(q.front(), at);
  EXPECT_EQ(front_id(q), 1u);
  EXPECT_EQ(q.front_pid(), 7);
  q.pop();
  EXPECT_TRUE(q.release());
  EXPECT_FALSE(q.has_memory());
  RecordQueue lazy(1 << 16);  // and without it, the first record allocates
  lazy.push(3, record(2, 20).data());
  EXPECT_TRUE(lazy.has_memory());
  EXPECT_EQ(front_id(lazy), 2u);
}

}  // namespace
}  // namespace eventfs
