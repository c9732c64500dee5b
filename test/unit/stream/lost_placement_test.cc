// Where a CPU's binary stream reports a loss. The invariant: records come
// in order, and between two records a reader gets (and before the first,
// and after the last) the lost-events records add up to exactly the events
// missing there: the records eventfs dropped and the kernel's losses
// (reported or dropped) that stood there. None stands where nothing is
// missing, and one read never holds two in a row.
//
// Driven here as the drainer and a reader drive the queues: a producer
// projecting raw records (one or two stable records each) into the queue,
// or into the staging queue while "a reader holds the lock", moved over at
// the next free turn; the kernel's lost-events records among them; and a
// reader taking or leasing runs of random sizes, the producer writing on
// while a lease is out. Seeded and deterministic; a failure names its seed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "eventfs/record.h"
#include "projection/projection.h"
#include "stream/hub_channels.h"
#include "stream/record_queue.h"

namespace eventfs {
namespace {

constexpr int kCpu = 3;
constexpr std::uint32_t kFirstId = 1000;  // projection i of a raw record: id kFirstId + i

struct Scenario {
  int projections;         // stable records per raw record
  bool kernel_loss;        // the kernel's lost-events records among them
  std::size_t queue_bytes;
  std::size_t staging_bytes;
};

// The drainer's side: what it made, by sequence number, and the queues.
class Producer {
 public:
  Producer(RecordQueue& queue, RecordQueue& staging, const Scenario& s) : queue_(queue), staging_(staging), s_(s) {}

  // One drain turn of `raw` raw records, as CpuDrainer makes them: into the
  // queue (the staged ones first; none while staged records wait for a
  // lease to be released), or into staging while `busy`, or from the first
  // one the queue has room for only under a lease's bytes.
  void turn(std::mt19937_64& rng, int raw, bool busy) {
    if (!busy && !staging_.empty()) {
      queue_.append(staging_, RecordQueue::Until::Lease);
      if (!staging_.empty()) return;  // (the records wait in the ring)
    }
    RecordQueue* to = busy ? &staging_ : &queue_;
    RecordQueue* overflow = busy ? nullptr : &staging_;
    for (int i = 0; i < raw; ++i) {
      ts_ += 1 + rng() % 3;
      if (s_.kernel_loss && rng() % 40 == 0) {  // a sub-buffer's lost mark comes before its records
        const std::uint64_t count = 1 + rng() % 50;
        weight.push_back(count);
        to->add_lost(ts_, count, false);
      }
      for (int p = 0; p < s_.projections; ++p) {
        const std::uint64_t seq = weight.size();
        weight.push_back(1);
        ++records;
        const std::uint32_t payload = static_cast<std::uint32_t>(8 * (1 + seq % 5));
        const std::uint32_t size = EVENTFS_RECORD_SIZE(payload);
        std::uint8_t* at = to->reserve(static_cast<std::int32_t>(seq % 1000), size, ts_);
        if (!at && overflow) {
          to = overflow;
          overflow = nullptr;
          at = to->reserve(static_cast<std::int32_t>(seq % 1000), size, ts_);
        }
        if (!at) {
          to->drop_record();
          continue;
        }
        eventfs_record_header h{size, kFirstId + static_cast<std::uint32_t>(p), ts_,
                                static_cast<std::int32_t>(seq % 1000), EVENTFS_RECORD_VERSION, 0};
        std::memcpy(at, &h, sizeof h);
        std::memset(at + sizeof h, 0, size - sizeof h);
        std::memcpy(at + sizeof h, &seq, sizeof seq);
      }
    }
  }
  void move_staged(RecordQueue::Until until = RecordQueue::Until::Lease) { queue_.append(staging_, until); }

  // By sequence number: 1 for a record, the count of a kernel loss.
  std::vector<std::uint64_t> weight;
  std::uint64_t records = 0;

 private:
  RecordQueue& queue_;
  RecordQueue& staging_;
  const Scenario& s_;
  std::uint64_t ts_ = 0;
};

// The reader's side: checks each read against the invariant as it comes.
class Checker {
 public:
  explicit Checker(const std::vector<std::uint64_t>& weight) : weight_(weight) {}

  void read(const std::string& bytes) {
    ++reads_;
    bool last_was_lost = false;
    for (std::size_t at = 0; at < bytes.size();) {
      eventfs_record_header h;
      if (bytes.size() - at < sizeof h) return fail("a partial header");
      std::memcpy(&h, bytes.data() + at, sizeof h);
      const std::uint32_t size = eventfs_record_check(reinterpret_cast<const eventfs_record_header*>(bytes.data() + at),
                                                      bytes.size() - at);
      if (size == 0) return fail("a malformed record");
      if (h.id == EVENTFS_ID_LOST) {
        eventfs_lost l;
        std::memcpy(&l, bytes.data() + at + sizeof h, sizeof l);
        if (l.count == 0) fail("a lost-events record with nothing lost");
        if (l.flags != 0) fail("a lost-events record with flags");
        if (l.cpu != kCpu) fail("a lost-events record of CPU " + std::to_string(l.cpu));
        if (last_was_lost) fail("two lost-events records in a row in one read");
        // (0: made when no record after the gap was queued yet.)
        if (h.timestamp != 0 && h.timestamp < last_ts_) fail("a lost-events record stamped before the record it follows");
        reported_ += l.count;
        ++lost_records_;
        pending_lost_ts_.push_back(h.timestamp);
        last_was_lost = true;
      } else {
        std::uint64_t seq;
        std::memcpy(&seq, bytes.data() + at + sizeof h, sizeof seq);
        if (seq >= weight_.size() || weight_[seq] != 1) return fail("a record that was never made");
        if (next_ > 0 && seq < next_) return fail("records out of order or repeated");
        for (std::uint64_t t : pending_lost_ts_)
          if (t > h.timestamp) fail("a lost-events record stamped after the record that follows it");
        pending_lost_ts_.clear();
        gap(seq);
        next_ = seq + 1;
        last_ts_ = h.timestamp;
        ++records_;
        last_was_lost = false;
      }
      at += size;
    }
  }
  // After the last read: the events missing after the last record.
  void end() { gap(weight_.size()); }

  std::vector<std::string> failures;
  std::uint64_t records_ = 0, lost_records_ = 0, gaps_ = 0, reads_ = 0;

 private:
  // The reports since the previous record against what is missing before
  // sequence number `seq`.
  void gap(std::uint64_t seq) {
    std::uint64_t missing = 0;
    for (std::uint64_t s = next_; s < seq; ++s) missing += weight_[s];
    if (missing) ++gaps_;
    if (reported_ != missing) {
      std::ostringstream o;
      o << "before sequence number " << seq << " (after " << (next_ ? std::to_string(next_ - 1) : "none")
        << "): " << missing << " events missing, " << reported_ << " reported";
      fail(o.str());
    }
    reported_ = 0;
  }
  void fail(const std::string& what) {
    if (failures.size() < 5) failures.push_back("read " + std::to_string(reads_) + ": " + what);
  }

  const std::vector<std::uint64_t>& weight_;
  std::uint64_t next_ = 0, reported_ = 0, last_ts_ = 0;
  std::vector<std::uint64_t> pending_lost_ts_;
};

// One seeded run: producer turns and reader reads in random order, then
// everything read out.
void run(const Scenario& s, std::uint64_t seed, int steps) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  RecordQueue queue(s.queue_bytes, EVENTFS_RECORD_SIZE(8)), staging(s.staging_bytes, EVENTFS_RECORD_SIZE(8));
  queue.set_cpu(kCpu);
  staging.set_cpu(kCpu);
  Producer producer(queue, staging, s);
  Checker checker(producer.weight);
  StreamChannel::Lease lease;
  bool leased = false;
  auto send_lease = [&] {  // the reply goes out with the lease's bytes, then they are released
    std::string bytes;
    for (int i = 0; i < lease.n; ++i) bytes.append(lease.parts[i]);
    checker.read(bytes);
    queue.unpin();
    leased = false;
  };
  std::uint64_t takes = 0, leases = 0;
  for (int step = 0; step < steps; ++step) {
    const unsigned what = rng() % 10;
    if (what < 5) {
      producer.turn(rng, 1 + static_cast<int>(rng() % 40), rng() % 3 == 0);
    } else if (what == 5) {
      producer.move_staged();
    } else if (leased) {
      send_lease();
    } else {
      const std::size_t max = 1 + rng() % 1500;
      if (what == 6 && lease_records(queue, max, lease)) {
        leased = true;
        ++leases;
      } else {
        std::string out;
        if (take_records(queue, kCpu, max, out)) {
          checker.read(out);
          ++takes;
        }
      }
    }
  }
  if (leased) send_lease();
  producer.move_staged(RecordQueue::Until::All);
  for (std::string out; take_records(queue, kCpu, 1 << 20, out); out.clear()) checker.read(out);
  checker.end();
  EXPECT_TRUE(checker.failures.empty()) << [&] {
    std::string all;
    for (const auto& f : checker.failures) all += f + "\n";
    return all;
  }();
  // The run did what it is for: gaps, leases, takes.
  EXPECT_GT(checker.gaps_, 0u);
  EXPECT_GT(leases, 0u);
  EXPECT_GT(takes, 0u);
  // What eventfs dropped is what its stats say ("dropped by eventfs").
  EXPECT_EQ(producer.records - checker.records_, queue.dropped_total() + staging.dropped_total());
}

class LostPlacement : public ::testing::TestWithParam<Scenario> {};

TEST_P(LostPlacement, EachGapIsReportedWhereItIsWithItsExactCount) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    run(GetParam(), seed, 4000);
    if (HasFailure()) break;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Queues, LostPlacement,
    ::testing::Values(Scenario{1, false, 4096, 1024}, Scenario{2, false, 4096, 1024}, Scenario{1, true, 4096, 1024},
                      Scenario{2, true, 4096, 1024}, Scenario{2, true, 1024, 512}),
    [](const auto& info) {
      const Scenario& s = info.param;
      return std::to_string(s.projections) + "PerRaw" + (s.kernel_loss ? "_KernelLoss" : "") + "_Queue" +
             std::to_string(s.queue_bytes);
    });

// The records of a read: each one's sequence number, or "lost N @ts".
std::vector<std::string> records_in(const std::string& read) {
  std::vector<std::string> seen;
  for (std::size_t at = 0; at < read.size();) {
    eventfs_record_header h;
    std::memcpy(&h, read.data() + at, sizeof h);
    std::uint64_t v;
    std::memcpy(&v, read.data() + at + sizeof h, sizeof v);
    seen.push_back(h.id == EVENTFS_ID_LOST ? "lost " + std::to_string(v) + " @" + std::to_string(h.timestamp)
                                           : std::to_string(v));
    at += h.size;
  }
  return seen;
}

// The plainest case: records that a lease keeps out of the queue are
// missing after the records queued before them, not before.
TEST(LostPlacement, RecordsALeaseKeptOutAreReportedAfterTheRecordsBeforeThem) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(5 * one + lost_record_size());
  q.set_cpu(kCpu);
  auto push = [&](std::uint64_t seq) {
    std::uint8_t* at = q.reserve(1, one, seq * 10);
    if (!at) return q.drop_record();
    eventfs_record_header h{one, kFirstId, seq * 10, 1, EVENTFS_RECORD_VERSION, 0};
    std::memcpy(at, &h, sizeof h);
    std::memcpy(at + sizeof h, &seq, sizeof seq);
  };
  for (std::uint64_t seq = 0; seq < 5; ++seq) push(seq);
  StreamChannel::Lease lease;
  ASSERT_TRUE(lease_records(q, 3 * one, lease));  // 0, 1 and 2, pinned
  std::string read;
  for (int i = 0; i < lease.n; ++i) read.append(lease.parts[i]);
  for (std::uint64_t seq = 5; seq < 9; ++seq) push(seq);  // 5 fits at the back; 6, 7, 8 would need the leased bytes
  EXPECT_EQ(q.dropped_total(), 3u);
  q.unpin();
  push(9);
  std::string rest;
  ASSERT_TRUE(take_records(q, kCpu, 1 << 20, rest));
  read += rest;
  // 0 1 2 | 3 4 5 [lost 3] 9
  EXPECT_EQ(records_in(read), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "lost 3 @90", "9"}));
}

// Records the queue has room for only under a lease's bytes wait in the
// staging queue, as the drainer puts them there: appending them stops at
// the lease and goes on once it is released, dropping nothing.
TEST(LostPlacement, StagedRecordsWaitForALeaseInsteadOfBeingDropped) {
  const std::uint32_t one = EVENTFS_RECORD_SIZE(8);
  RecordQueue q(5 * one + lost_record_size()), staging(16 * one);
  q.set_cpu(kCpu);
  staging.set_cpu(kCpu);
  auto record = [&](std::uint64_t seq) {
    std::vector<std::uint8_t> r(one, 0);
    eventfs_record_header h{one, kFirstId, seq * 10, 1, EVENTFS_RECORD_VERSION, 0};
    std::memcpy(r.data(), &h, sizeof h);
    std::memcpy(r.data() + sizeof h, &seq, sizeof seq);
    return r;
  };
  for (std::uint64_t seq = 0; seq < 5; ++seq) q.push(1, record(seq).data());
  StreamChannel::Lease lease;
  ASSERT_TRUE(lease_records(q, 3 * one, lease));  // 0, 1 and 2, pinned
  std::string read;
  for (int i = 0; i < lease.n; ++i) read.append(lease.parts[i]);
  for (std::uint64_t seq = 5; seq < 9; ++seq) staging.push(1, record(seq).data());
  EXPECT_FALSE(q.append(staging, RecordQueue::Until::Lease));  // 5 fits at the back; 6 would need the leased bytes
  EXPECT_FALSE(staging.empty());
  q.unpin();
  EXPECT_TRUE(q.append(staging, RecordQueue::Until::Lease));
  EXPECT_TRUE(staging.empty());
  EXPECT_EQ(q.dropped_total(), 0u);
  std::string rest;
  ASSERT_TRUE(take_records(q, kCpu, 1 << 20, rest));
  read += rest;
  EXPECT_EQ(records_in(read), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8"}));
}

}  // namespace
}  // namespace eventfs
