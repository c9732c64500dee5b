// A per-CPU FIFO of projected records (the include/eventfs/record.h framing),
// each with the common_pid the text stream shows. Bounded: when a reader
// falls behind, the oldest records go and the next reader is told how many
// (a lost-events record at the place of the gap).
//
// Every gap is reported where it is, once: between two records a reader
// gets, the lost-events records add up to the events missing there, and
// there is none where nothing is missing. A gap before the front record
// (the oldest dropped) is kept as a count that the reader turns into a
// lost-events record (take_gap()); a gap after the back record (a record
// that could not be queued, a lease being in the way) as a count that
// becomes a lost-events record in the queue, in front of the next record
// queued, or joins a lost-events record already at the back. So the
// queue never holds two lost-events records in a row.
//
// One circular byte buffer of records back to back, allocated at the first
// record or by adopt() (an idle mount costs nothing) and never moved: each record is
// contiguous (one that does not fit before the end starts again at the
// front), so nothing is allocated or slid per record, a record is projected
// straight into its place (reserve, then write), and a reader takes a run
// of records with one copy (take_into). Each record's pid and size sit in
// a ring of their own: finding where a run ends reads that small array
// in order, not each record's header from a buffer gone cold in cache.
//
// Its memory follows what waits in it. Both buffers are mapped at their
// full size, but only a first part is in use (kFirstBytes, with its pages
// faulted in): records start again at the front at the end of the part in
// use. When records fill more than half of it there, it doubles (up to the
// full size) instead, its new pages faulted in at once, so that a storm
// does not take a page fault every 4 KiB on its first pass through them;
// a queue that has gone round its end grows by moving its older run of
// records to the end of the larger part (one copy per doubling, never per
// record). trim(), called now and then, shrinks it back to twice what it
// held at most since the last call and gives those pages back to the
// system (MADV_DONTNEED): a queue whose reader keeps up holds a few batches
// of records, one whose reader stopped holds up to the full size. Growing
// and shrinking change nothing a reader sees: the queue drops records only
// when the full size would be exceeded, as if it had it all along.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace eventfs {

// Deletes what mmap() gave: `bytes` of it.
struct UnmapBytes {
  std::size_t bytes = 0;
  void operator()(void* p) const;
};

class RecordQueue {
 public:
  // `max_bytes`: the capacity, in bytes of records. `smallest_record`: the
  // size of the smallest record that will be queued (at least a header's),
  // which sizes the ring of pids and sizes; should records come smaller, the
  // oldest go when that ring is full, as when the bytes are.
  // `first_bytes`: the part of the buffer in use at first, and again once
  // trim() finds the queue held little (kFirstBytes, or all of it if less).
  static constexpr std::size_t kFirstBytes = 256u << 10;
  explicit RecordQueue(std::size_t max_bytes, std::size_t smallest_record = kMinRecord,
                       std::size_t first_bytes = kFirstBytes);

  // Room for one record of `size` bytes (a multiple of 8) at the back, made
  // by dropping the oldest if needed; the caller writes the record there
  // (its header's size must be `size`, its time stamp `ts`). A gap at the
  // back is first written there as a lost-events record stamped `ts`.
  // nullptr if `size` exceeds the capacity or is not a record's size, or if
  // the only room is under a lease's bytes: the caller then accounts for the
  // record with drop_record().
  std::uint8_t* reserve(std::int32_t pid, std::uint32_t size, std::uint64_t ts) {
    // (No room for the report of the gap at the back: the record joins it.)
    if (back_gap_.any() && !place_lost(ts, {})) [[unlikely]]
      return nullptr;
    return place(pid, size);
  }
  // A lost-events record at the back (`count` events lost there, `unknown`:
  // an estimate), joined with a gap already there.
  void add_lost(std::uint64_t ts, std::uint64_t count, bool unknown);
  // The CPU named in the lost-events records the queue writes.
  void set_cpu(std::uint32_t cpu) { cpu_ = cpu; }
  // The queue's buffers, allocated with the pages of their first part faulted
  // in (so that the first pass through them in a storm does not take a page
  // fault every 4 KiB) apart from the queue: the caller need not hold the
  // lock that guards the queue meanwhile. adopt() gives them to the queue
  // they were made for if it has none (it never touches records), else
  // frees them.
  class Memory;
  Memory prefaulted() const;
  void adopt(Memory&& memory);
  bool has_memory() const { return buf_ != nullptr; }
  // Frees the buffers of a queue that holds nothing and has no loss to
  // report (the next record or adopt() allocates them again); false
  // otherwise.
  bool release();
  // Shrinks the part of the buffer in use to twice the most bytes the queue
  // held since the last call (a power of two times the first part, no less
  // than it), the ring of pids and sizes with it, and gives the pages past
  // them back to the system; pages that records or a lease's bytes still
  // take are kept until a later call finds them free. Called now and then:
  // its period is how long a queue that held much keeps its memory once it
  // holds little.
  // The pages go back when the Unused it returns is dropped (or at its
  // give_back()), which may be after the lock that guards the queue is
  // released, but must be before the queue is given another record: only
  // reserve() and push(), growing the queue, could use them again.
  class Unused;
  Unused trim();
  // The bytes of memory the queue holds (its records, their pids and sizes):
  // the pages it faulted in and has not given back.
  std::size_t memory_bytes() const { return buf_ ? touched_ + meta_touched_ : 0; }
  // Appends a copy of one framed record (header.size bytes at `rec`).
  void push(std::int32_t pid, const std::uint8_t* rec) {
    if (!try_push(pid, rec)) drop_record();
  }
  // The same, or false (nothing appended, nothing counted) where reserve()
  // gives nullptr: the only room is under a lease's bytes.
  bool try_push(std::int32_t pid, const std::uint8_t* rec);
  // Moves every record of `from` to the back, its gaps with them at their
  // places; `from` is left empty, with no gap. Until a lease: `from` keeps
  // the records from the first one whose only room is under a lease's bytes
  // on (false) instead of their being dropped, to be appended once the
  // lease is released.
  enum class Until { All, Lease };
  bool append(RecordQueue& from, Until until = Until::All);

  bool empty() const { return count_ == 0; }
  // The oldest record (its framing) and its pid; only when !empty().
  const std::uint8_t* front() const { return buf_.get() + head_; }
  std::int32_t front_pid() const { return meta_[meta_head_].pid; }
  std::uint32_t front_size() const { return meta_[meta_head_].size; }
  std::uint64_t front_ts() const;
  void pop();
  // Appends whole records from the front to `out` and removes them: as many
  // as fit in `max_bytes`, and the first even if it alone does not when
  // `at_least_one`. Returns how many. One copy per contiguous run.
  std::size_t take_into(std::string& out, std::size_t max_bytes, bool at_least_one);
  // The same records in place, as one or two contiguous runs (two when they
  // go on at the front of the buffer), not removed; pop_front() removes them.
  struct Runs {
    const std::uint8_t* at[2] = {};
    std::size_t bytes[2] = {};
    std::size_t records[2] = {};
    int n = 0;
  };
  Runs front_runs(std::size_t max_bytes, bool at_least_one) const;
  void pop_front(const Runs& runs);
  // The records front_runs(max_bytes, false) gives, removed from the queue
  // at once, their bytes left in place until unpin(): a reader sends them
  // with no lock held. One lease at a time (n == 0 while one is out, or when
  // there is nothing). While it is out, reserve() never writes over its
  // bytes (a record that would have to is not queued: it joins the gap at
  // the back) and release() keeps the buffers.
  Runs lease(std::size_t max_bytes);
  void unpin();
  bool pinned() const { return pins_.n > 0; }

  // Accounting for a record that was not queued (reserve() gave nullptr):
  // it joins the gap at the back, reported before the next record queued.
  void drop_record();

  // Events missing before the front record, not yet reported: records
  // dropped there (the oldest, or the newest of a queue that was empty),
  // plus the counts of the kernel's lost-events records among them
  // (`unknown` if one of those had no exact count).
  struct Dropped {
    std::uint64_t count = 0;
    bool unknown = false;
    bool any() const { return count || unknown; }
    void add(const Dropped& o) {
      count += o.count;
      unknown |= o.unknown;
    }
  };
  Dropped take_dropped() {
    Dropped d = unreported_;
    unreported_ = {};
    if (empty()) {  // (what was after the back record is before the next one)
      d.add(back_gap_);
      back_gap_ = {};
    }
    return d;
  }
  bool has_dropped() const { return unreported_.any() || (empty() && back_gap_.any()); }
  // The gap before the front record as one report: take_dropped() joined
  // with a lost-events record at the front (popped). `ts`: the time stamp
  // of the first record after the gap (that lost-events record's when no
  // record follows; 0 when there was none).
  Dropped take_gap(std::uint64_t& ts);
  // Records (not lost-events records) dropped so far.
  std::uint64_t dropped_total() const { return dropped_total_; }
  std::uint64_t count() const { return count_; }
  // Bytes that can be reserved without dropping anything (a lower bound:
  // free space split by the end of the buffer counts only its larger part).
  std::size_t free_bytes() const;

 private:
  static constexpr std::size_t kMinRecord = 16;  // a record header
  Memory map_memory(bool populate) const;
  // What a buffer of `bytes` holds records' pids and sizes for.
  std::size_t meta_for(std::size_t bytes) const { return std::min(meta_cap_, bytes / smallest_ + 1); }
  // The part in use grown to at least `bytes` (false: it cannot be): when
  // the records run from the front, in place; when they have gone round
  // the end, by moving the older run to the end of the new part. New pages
  // are faulted in.
  bool grow_to(std::size_t bytes);
  bool grow_wrapped();
  bool grow_meta();
  void fault_in(std::size_t bytes);  // buf_ up to `bytes` (touched_ on)
  std::size_t used_bytes() const {   // the live records' bytes
    return empty() ? 0 : wrapped_ ? end_ - head_ + tail_ : tail_ - head_;
  }
  void popped(std::size_t records, std::size_t bytes);
  void drop_oldest();
  void drop_framed(const std::uint8_t* rec);  // the front record, into the gap before the front
  // Room for a record at the back, dropping the oldest: reserve() with no
  // gap to write.
  std::uint8_t* place(std::int32_t pid, std::uint32_t size);
  // A lost-events record at the back, reporting `gap` with the gap at the
  // back (and the one at the front when it is the only record); false if
  // there was no room for it.
  bool place_lost(std::uint64_t ts, Dropped gap);
  void gap_at_back(const Dropped& gap);
  std::uint8_t* back_lost();  // the back record if it is a lost-events record

  // Memory mapped for the queue alone: unmapped, it goes back to the
  // system at once (the heap may keep a freed block, the sanitizers do).
  std::unique_ptr<std::uint8_t[], UnmapBytes> buf_;
  std::size_t cap_;
  std::size_t first_;  // the part in use at first
  std::size_t limit_;  // the part in use: records go round at its end
  // Bytes from the front whose pages may be in memory; the pages past it
  // are not (given back, or never touched).
  std::size_t touched_ = 0;
  std::size_t peak_ = 0;  // the most bytes held since the last trim()
  // Live records: [head_, tail_) when !wrapped_; [head_, end_) then
  // [0, tail_) when wrapped_. tail_ (or end_) may lie past limit_ after a
  // trim(): the next record then goes to the front.
  std::size_t head_ = 0, tail_ = 0, end_ = 0;
  // The pid and size of each live record, from meta_head_ on, count_ of
  // them, in a ring of meta_limit_ (of at most meta_cap_) entries.
  struct Meta {
    std::int32_t pid;
    std::uint32_t size;
  };
  std::unique_ptr<Meta[], UnmapBytes> meta_;
  std::size_t smallest_, meta_cap_, meta_first_, meta_limit_, meta_head_ = 0;
  std::size_t meta_touched_ = 0;  // bytes of meta_, as touched_
  bool wrapped_ = false;
  Runs pins_;  // the bytes of the lease that is out (n == 0: none)
  bool overlaps_pins(std::size_t at, std::size_t size) const;
  std::uint64_t count_ = 0, dropped_total_ = 0;
  Dropped unreported_;  // the gap before the front record
  Dropped back_gap_;    // the gap after the back record (while empty, one with unreported_)
  std::uint32_t cpu_ = 0;
};

class RecordQueue::Unused {
 public:
  Unused() = default;
  Unused(Unused&& o) noexcept : buf_(std::exchange(o.buf_, {})), meta_(std::exchange(o.meta_, {})) {}
  Unused& operator=(Unused&&) = delete;
  ~Unused() { give_back(); }
  void give_back();

 private:
  friend class RecordQueue;
  struct Run {
    std::uint8_t* at = nullptr;
    std::size_t bytes = 0;
  };
  Run buf_, meta_;  // pages of the buffer, of the ring of pids and sizes
};

class RecordQueue::Memory {
 private:
  friend class RecordQueue;
  std::unique_ptr<std::uint8_t[], UnmapBytes> buf;
  std::unique_ptr<Meta[], UnmapBytes> meta;
};

}  // namespace eventfs
