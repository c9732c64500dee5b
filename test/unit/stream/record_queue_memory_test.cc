// The record queue's memory follows what waits in it: only a first part is
// in use (and in memory) while its reader keeps up; it grows as records
// wait, up to its full size, dropping nothing it would not have dropped
// with all of it; trim() gives back what the last period did not need.
// Residence is what the kernel says (mincore), not the queue's own count.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "eventfs/record.h"
#include "stream/record_queue.h"

namespace eventfs {
namespace {

constexpr std::uint32_t kOne = EVENTFS_RECORD_SIZE(8);  // 32 bytes
constexpr std::size_t kFull = 8u << 20;

std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Bytes of [at, at + bytes) in memory (`at` page-aligned).
std::size_t resident(const std::uint8_t* at, std::size_t bytes) {
  std::vector<unsigned char> in((bytes + page() - 1) / page());
  EXPECT_EQ(::mincore(const_cast<std::uint8_t*>(at), bytes, in.data()), 0) << std::strerror(errno);
  std::size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n * page();
}

// Record `id`, of `size` bytes: its payload bytes are the id's low byte.
std::vector<std::uint8_t> record(std::uint32_t id, std::uint32_t size = kOne) {
  std::vector<std::uint8_t> r(size, static_cast<std::uint8_t>(id));
  eventfs_record_header h{};
  h.size = size;
  h.id = id;
  h.timestamp = id;
  h.version = EVENTFS_RECORD_VERSION;
  std::memcpy(r.data(), &h, sizeof h);
  return r;
}

std::uint32_t front_id(const RecordQueue& q) {
  eventfs_record_header h;
  std::memcpy(&h, q.front(), sizeof h);
  return h.id;
}

// Pops the front, checking it is record `id` of `size` bytes, whole.
void pop_expecting(RecordQueue& q, std::uint32_t id, std::uint32_t size = kOne) {
  ASSERT_FALSE(q.empty()) << "record " << id << " missing";
  ASSERT_EQ(front_id(q), id);
  ASSERT_EQ(q.front_size(), size);
  ASSERT_EQ(q.front_pid(), static_cast<std::int32_t>(id));
  ASSERT_EQ(std::memcmp(q.front(), record(id, size).data(), size), 0) << "record " << id << " mangled";
  q.pop();
}

// The buffer's address: the first record of a fresh queue is at its front.
const std::uint8_t* base_of(RecordQueue& q) {
  EXPECT_TRUE(q.empty());
  q.push(0, record(~0u).data());  // (an id no test counts to; 0 is a lost-events record's)
  const std::uint8_t* base = q.front();
  q.pop();
  return base;
}

// A stream opened: the queue's memory made for it, as a session's start
// makes it, is in memory only for the first part.
TEST(RecordQueueMemory, AFreshQueueHasOnlyItsFirstPartInMemory) {
  RecordQueue q(kFull, kOne);
  q.adopt(q.prefaulted());
  const std::uint8_t* base = base_of(q);
  EXPECT_LE(resident(base, kFull), RecordQueue::kFirstBytes) << "of a queue of " << kFull << " bytes holding nothing";
  EXPECT_GE(resident(base, RecordQueue::kFirstBytes), RecordQueue::kFirstBytes) << "the first part is faulted in";
  EXPECT_LE(q.memory_bytes(), RecordQueue::kFirstBytes + RecordQueue::kFirstBytes / kOne * 8 + 2 * page());
}

// A reader that keeps up (it leaves a record or two behind, so the queue is
// never empty and never starts again at the front by itself): the records
// go round the first part, whatever went through.
TEST(RecordQueueMemory, AQueueWhoseReaderKeepsUpStaysInItsFirstPart) {
  RecordQueue q(kFull, kOne);
  const std::uint8_t* base = base_of(q);
  std::uint32_t in = 1, out = 1;
  for (int round = 0; round < 1000; ++round) {  // 100k records, 3.2 MB
    for (int i = 0; i < 100; ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
    while (in - out > 2) {
      pop_expecting(q, out++);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(q.dropped_total(), 0u);
  EXPECT_LE(resident(base, kFull), RecordQueue::kFirstBytes);
  EXPECT_LE(q.memory_bytes(), RecordQueue::kFirstBytes + RecordQueue::kFirstBytes / kOne * 8 + 2 * page());
}

// A reader that stopped: the queue grows to its full size, every record
// kept in order, and drops the oldest only then, as it always did.
TEST(RecordQueueMemory, AQueueGrowsToItsFullSizeAsRecordsWait) {
  RecordQueue q(kFull, kOne);
  q.adopt(q.prefaulted());
  const std::uint8_t* base = base_of(q);
  const std::uint32_t holds = kFull / kOne;
  for (std::uint32_t i = 1; i <= holds; ++i) q.push(static_cast<std::int32_t>(i), record(i).data());
  EXPECT_EQ(q.count(), holds);
  EXPECT_EQ(q.dropped_total(), 0u) << "dropped before the queue was full";
  EXPECT_GE(resident(base, kFull), kFull - page());
  EXPECT_GE(q.memory_bytes(), kFull + holds * 8);
  q.push(static_cast<std::int32_t>(holds + 1), record(holds + 1).data());
  EXPECT_EQ(q.dropped_total(), 1u);
  EXPECT_EQ(q.take_dropped().count, 1u);
  for (std::uint32_t i = 2; i <= holds + 1; ++i) {
    pop_expecting(q, i);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(q.empty());
}

// The same once the records have gone round the end of the part in use:
// the queue grows by moving its older records, which stay whole and in
// order, and holds nearly its full size before it drops any.
TEST(RecordQueueMemory, AQueueThatWentRoundItsEndGrowsWithItsRecordsInOrder) {
  RecordQueue q(kFull, kOne);
  std::uint32_t in = 1, out = 1;
  // Round the first part a few times, a reader keeping up.
  for (std::uint32_t i = 0; i < 3 * RecordQueue::kFirstBytes / kOne; ++i, ++in) {
    q.push(static_cast<std::int32_t>(in), record(in).data());
    if (in - out > 1000) {
      pop_expecting(q, out++);
      if (HasFatalFailure()) return;
    }
  }
  // The reader stops.
  while (q.dropped_total() == 0) {
    q.push(static_cast<std::int32_t>(in), record(in).data());
    ++in;
  }
  const std::uint64_t held = q.count() + 1;  // before the drop
  EXPECT_GE(held * kOne, kFull - 2 * kOne) << "dropped with room in a queue of " << kFull << " bytes";
  EXPECT_EQ(q.take_dropped().count, 1u);
  ++out;  // (the oldest)
  while (out < in) {
    pop_expecting(q, out++);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(q.empty());
}

// A lease out while the queue grows round its end: its bytes stay as
// they were, the records queued meanwhile too.
TEST(RecordQueueMemory, ALeasesBytesStayPutWhileTheQueueGrows) {
  const std::size_t first = 4096, full = 64 << 10;
  RecordQueue q(full, kOne, first);
  std::uint32_t in = 1, out = 1;
  for (; in <= first / kOne + 40; ++in) {  // past the first part's end: to the front
    q.push(static_cast<std::int32_t>(in), record(in).data());
    if (in - out > 20) {
      pop_expecting(q, out++);
      if (HasFatalFailure()) return;
    }
  }
  RecordQueue::Runs l = q.lease(10 * kOne);
  ASSERT_EQ(l.n, 1);
  ASSERT_EQ(l.records[0], 10u);
  const std::vector<std::uint8_t> lent(l.at[0], l.at[0] + l.bytes[0]);
  out += 10;
  const std::uint32_t room = full / kOne - 10 - 20;  // (less the lease, less what the wraps may leave unused)
  for (std::uint32_t i = 0; i < room - (in - out); ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  EXPECT_EQ(q.dropped_total(), 0u);
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), lent) << "a leased byte was written";
  q.unpin();
  while (out < in) {
    pop_expecting(q, out++);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(q.empty());
}

// A lease at the front of the part in use: the records after it go on
// past the part's end (it grows) rather than be dropped at the front.
TEST(RecordQueueMemory, RecordsGoPastTheEndOfThePartRatherThanOverALeaseAtItsFront) {
  const std::size_t first = 4096;
  RecordQueue q(64 << 10, kOne, first);
  std::uint32_t in = 1;
  for (; in <= 100; ++in) q.push(static_cast<std::int32_t>(in), record(in).data());  // 3200 bytes
  RecordQueue::Runs l = q.lease(1 << 20);
  ASSERT_EQ(l.n, 1);
  ASSERT_EQ(l.records[0], 100u);
  for (std::uint32_t i = 0; i < 100; ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  EXPECT_EQ(q.dropped_total(), 0u);
  EXPECT_FALSE(q.has_dropped());
  q.unpin();
  for (std::uint32_t out = 101; out < in; ++out) {
    pop_expecting(q, out);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(q.empty());
}

// trim(): a queue that held much keeps its memory for the period it did,
// and gives it back after a period in which it held little; then grows
// again as records wait.
TEST(RecordQueueMemory, TrimGivesBackWhatThePeriodDidNotNeed) {
  RecordQueue q(kFull, kOne);
  q.adopt(q.prefaulted());
  const std::uint8_t* base = base_of(q);
  const std::uint32_t many = (4u << 20) / kOne;
  std::uint32_t in = 1, out = 1;
  for (; in <= many; ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  while (out < in) {
    pop_expecting(q, out++);
    if (HasFatalFailure()) return;
  }
  const std::size_t grown = resident(base, kFull);
  EXPECT_GE(grown, std::size_t(4) << 20);
  const std::size_t memory = q.memory_bytes();
  q.trim();
  EXPECT_EQ(resident(base, kFull), grown) << "4 MiB held in this period";
  EXPECT_EQ(q.memory_bytes(), memory);
  q.trim();
  EXPECT_LE(resident(base, kFull), RecordQueue::kFirstBytes) << "nothing held in this one";
  EXPECT_LE(q.memory_bytes(), RecordQueue::kFirstBytes + RecordQueue::kFirstBytes / kOne * 8 + 2 * page());
  for (; in <= 2 * many; ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  EXPECT_EQ(q.dropped_total(), 0u);
  EXPECT_GE(resident(base, kFull), std::size_t(4) << 20);
  while (out < in) {
    pop_expecting(q, out++);
    if (HasFatalFailure()) return;
  }
}

// A period that held a little more than the first part keeps twice that.
TEST(RecordQueueMemory, TrimKeepsTwiceWhatThePeriodHeld) {
  RecordQueue q(kFull, kOne);
  const std::uint8_t* base = base_of(q);
  const std::uint32_t many = (3u << 20) / kOne, some = (300u << 10) / kOne;
  std::uint32_t in = 1, out = 1;
  for (; in <= many; ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  while (out < in) pop_expecting(q, out++);
  ASSERT_GE(resident(base, kFull), std::size_t(3) << 20);
  q.trim();  // (a period that held 3 MiB)
  // Two periods of 300 KiB at most, the records going round the part in
  // use (the first period ends with records past the part it keeps: the
  // second goes round that part, and they are gone by its end).
  for (int period = 0; period < 2; ++period) {
    for (int round = 0; round < 20; ++round) {
      for (std::uint32_t i = 0; i < some; ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
      while (in - out > 10) pop_expecting(q, out++);
    }
    q.trim();
  }
  const std::size_t kept = resident(base, kFull);
  EXPECT_LE(kept, 4 * RecordQueue::kFirstBytes) << "twice 300 KiB, in doublings of 256 KiB: 1 MiB";
  EXPECT_GT(kept, 2 * RecordQueue::kFirstBytes);
  EXPECT_EQ(q.dropped_total(), 0u);
  while (out < in) pop_expecting(q, out++);
}

// Pages that records or a lease's bytes still take stay until they are
// free: the records are intact, and a later trim() gives the pages back.
TEST(RecordQueueMemory, TrimKeepsThePagesOfRecordsAndLeasesStillThere) {
  RecordQueue q(kFull, kOne);
  const std::uint8_t* base = base_of(q);
  const std::uint32_t many = (4u << 20) / kOne;
  std::uint32_t in = 1, out = 1;
  for (; in <= many; ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  while (in - out > 100) pop_expecting(q, out++);
  RecordQueue::Runs l = q.lease(50 * kOne);  // 50 leased, 50 queued, near the 4 MiB mark
  ASSERT_EQ(l.n, 1);
  const std::vector<std::uint8_t> lent(l.at[0], l.at[0] + l.bytes[0]);
  out += 50;
  q.trim();
  q.trim();
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), lent) << "leased bytes given back";
  EXPECT_GE(resident(base, kFull), std::size_t(4) << 20) << "pages under records given back";
  // New records go to the front of the smaller part.
  for (std::uint32_t i = 0; i < 100; ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in).data());
  EXPECT_EQ(q.dropped_total(), 0u);
  while (out < in) pop_expecting(q, out++);
  q.trim();
  const std::size_t lease_end = static_cast<std::size_t>(l.at[0] + l.bytes[0] - base);
  EXPECT_GE(resident(base, kFull), lease_end / page() * page()) << "the lease is still out";
  EXPECT_LT(resident(base, kFull), lease_end + page()) << "the pages past the lease are free";
  EXPECT_EQ(std::vector<std::uint8_t>(l.at[0], l.at[0] + l.bytes[0]), lent) << "leased bytes given back";
  q.unpin();
  q.trim();
  EXPECT_LE(resident(base, kFull), RecordQueue::kFirstBytes);
}

// Shrinking the ring of the records' pids and sizes keeps each record's,
// wherever in that ring the records stand (across its end too).
TEST(RecordQueueMemory, TrimKeepsEachRecordsPidAndSize) {
  const std::uint32_t small = EVENTFS_RECORD_SIZE(0), full = 16 << 10;
  for (std::uint32_t shift = 0; shift < 40; ++shift) {
    RecordQueue q(full, small, 1024);
    std::uint32_t in = 1, out = 1;
    for (; in <= full / small; ++in) q.push(static_cast<std::int32_t>(in), record(in, small).data());
    while (in - out > 10) pop_expecting(q, out++, small);
    q.trim();  // (a period that held it full)
    for (std::uint32_t i = 0; i < shift; ++i, ++in) {
      q.push(static_cast<std::int32_t>(in), record(in, small).data());
      pop_expecting(q, out++, small);
    }
    q.trim();
    q.trim();
    for (std::uint32_t i = 0; i < 100; ++i, ++in) q.push(static_cast<std::int32_t>(in), record(in, small).data());
    while (out < in) {
      pop_expecting(q, out++, small);
      if (HasFatalFailure()) return;
    }
    EXPECT_EQ(q.dropped_total(), 0u);
  }
}

// Records of many sizes through a small queue that starts with a small
// part, grows and is trimmed at random: what comes out is in order and
// whole, what went missing was reported, and it dropped records only when
// what it held and the new record came near its full size.
TEST(RecordQueueMemory, GrowingAndTrimmingLoseNothingItWouldNotHaveLost) {
  const std::size_t full = 16 << 10;
  RecordQueue q(full, 16, 1024);
  std::deque<std::pair<std::uint32_t, std::uint32_t>> held;  // what the queue should hold: id, size
  std::size_t held_bytes = 0;
  std::uint32_t next = 1;
  std::uint64_t dropped = 0, drops_checked = 0;
  unsigned seed = 4242;
  auto rnd = [&] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  unsigned reader = 0;  // how fast the reader is: it keeps up, falls behind slowly, or stopped
  for (int round = 0; round < 50000; ++round) {
    if (rnd() % 30 == 0) reader = rnd() % 3;
    for (unsigned i = rnd() % 6; i > 0; --i, ++next) {
      const std::uint32_t size = EVENTFS_RECORD_SIZE(8 * (rnd() % 20));
      const std::uint64_t before = q.dropped_total();
      q.push(static_cast<std::int32_t>(next), record(next, size).data());
      for (std::uint64_t d = q.dropped_total() - before; d > 0; --d) {  // the oldest went
        ASSERT_FALSE(held.empty());
        ASSERT_GT(held_bytes + size, full - 2 * EVENTFS_RECORD_SIZE(8 * 19))
            << "dropped holding " << held_bytes << " bytes of " << full;
        held_bytes -= held.front().second;
        held.pop_front();
        ++dropped;
        ++drops_checked;
      }
      held.emplace_back(next, size);
      held_bytes += size;
    }
    dropped -= q.take_dropped().count;
    ASSERT_EQ(dropped, 0u) << "each drop reported, once";
    if (rnd() % 20 == 0) q.trim();
    for (unsigned i = reader == 2 ? 0 : rnd() % (reader == 0 ? 10 : 5); i > 0 && !held.empty(); --i) {
      pop_expecting(q, held.front().first, held.front().second);
      if (HasFatalFailure()) return;
      held_bytes -= held.front().second;
      held.pop_front();
    }
    ASSERT_EQ(q.count(), held.size());
  }
  EXPECT_GT(drops_checked, 0u) << "the test never made the queue drop";
  while (!held.empty()) {
    pop_expecting(q, held.front().first, held.front().second);
    if (HasFatalFailure()) return;
    held.pop_front();
  }
}

// The same with leases out at random: a lease's bytes stay as they were
// until it is given back, whatever the queue does meanwhile (grows, goes
// round, is trimmed), and every record is taken in order, whole, or
// reported dropped.
TEST(RecordQueueMemory, LeasesStayIntactWhileTheQueueGrowsAndIsTrimmed) {
  RecordQueue q(16 << 10, 16, 1024);
  std::uint32_t next = 1, last_out = 0;
  std::uint64_t taken = 0, reported = 0;
  std::vector<std::uint8_t> lent[2];
  RecordQueue::Runs lease;
  unsigned seed = 777, reader = 0;
  auto rnd = [&] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  // Checks records [at, at + bytes) (in order after last_out) and counts
  // them, and the losses that lost-events records among them report (of
  // records that found a lease's bytes in their way).
  auto check = [&](const std::uint8_t* at, std::size_t bytes) {
    for (std::size_t off = 0; off < bytes;) {
      eventfs_record_header h;
      std::memcpy(&h, at + off, sizeof h);
      if (h.id == EVENTFS_ID_LOST) {
        eventfs_lost l;
        std::memcpy(&l, at + off + sizeof h, sizeof l);
        reported += l.count;
        off += h.size;
        continue;
      }
      ASSERT_GT(h.id, last_out) << "out of order";
      ASSERT_EQ(std::memcmp(at + off, record(h.id, h.size).data(), h.size), 0) << "record " << h.id << " mangled";
      last_out = h.id;
      off += h.size;
      ++taken;
    }
  };
  for (int round = 0; round < 50000; ++round) {
    if (rnd() % 30 == 0) reader = rnd() % 3;
    for (unsigned i = rnd() % 6; i > 0; --i, ++next)
      q.push(static_cast<std::int32_t>(next), record(next, EVENTFS_RECORD_SIZE(8 * (rnd() % 20))).data());
    if (rnd() % 20 == 0) q.trim();
    reported += q.take_dropped().count;
    if (lease.n && rnd() % 4 == 0) {  // given back
      for (int r = 0; r < lease.n; ++r)
        ASSERT_EQ(std::vector<std::uint8_t>(lease.at[r], lease.at[r] + lease.bytes[r]), lent[r]) << "a leased byte was written";
      q.unpin();
      lease = {};
    }
    if (reader == 2) continue;
    if (!lease.n && !q.has_dropped() && rnd() % 3 == 0) {
      lease = q.lease(rnd() % 2000);
      for (int r = 0; r < lease.n; ++r) {
        lent[r].assign(lease.at[r], lease.at[r] + lease.bytes[r]);
        check(lease.at[r], lease.bytes[r]);
        if (HasFatalFailure()) return;
      }
      continue;
    }
    for (unsigned i = rnd() % (reader == 0 ? 10 : 5); i > 0 && !q.empty(); --i) {
      check(q.front(), q.front_size());
      if (HasFatalFailure()) return;
      q.pop();
    }
  }
  q.unpin();
  while (!q.empty()) {
    check(q.front(), q.front_size());
    if (HasFatalFailure()) return;
    q.pop();
  }
  reported += q.take_dropped().count;
  EXPECT_EQ(taken + reported, next - 1u) << "every record taken or reported dropped";
  EXPECT_EQ(reported, q.dropped_total());
  EXPECT_GT(reported, 0u) << "the test never made the queue drop";
}

}  // namespace
}  // namespace eventfs
