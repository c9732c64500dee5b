#include "stream/record_queue.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include <eventfs/record.h>

#include "projection/projection.h"

namespace eventfs {

RecordQueue::RecordQueue(std::size_t max_bytes, std::size_t smallest_record, std::size_t first_bytes)
    : cap_(max_bytes),
      first_(std::min(max_bytes, std::max(first_bytes, kMinRecord))),
      limit_(first_),
      smallest_(std::max(smallest_record, kMinRecord)),
      meta_cap_(max_bytes / smallest_ + 1),
      meta_first_(meta_for(first_)),
      meta_limit_(meta_first_) {}

std::uint8_t* RecordQueue::place(std::int32_t pid, std::uint32_t size) {
  if (size > cap_ || size < kMinRecord) return nullptr;
  if (!buf_) adopt(map_memory(false));
  std::size_t at;
  bool wrap = false;  // `at` starts again at the front
  for (;;) {
    if (empty()) {
      // Start at the front again, or while a lease is out just after its
      // bytes (all the others are free).
      if (pinned()) {
        head_ = tail_ = static_cast<std::size_t>(pins_.at[pins_.n - 1] - buf_.get()) + pins_.bytes[pins_.n - 1];
      } else {
        head_ = tail_ = end_ = 0;
      }
      wrapped_ = false;
      meta_head_ = 0;
    }
    if (!wrapped_) {
      if (tail_ + size <= limit_) {
        at = tail_;
        break;
      }
      // At the end of the part in use: on at the front, unless records
      // would fill more than half of the part (they wait: it grows) or the
      // front has no room (a lease's bytes may be there).
      if ((tail_ - head_ + size > limit_ / 2 || head_ < size || overlaps_pins(0, size)) && grow_to(tail_ + size))
        continue;
      if (head_ >= size) {
        wrap = true;
        at = 0;
        break;
      }
    } else if (head_ - tail_ >= size) {
      at = tail_;
      break;
    } else if (grow_wrapped()) {
      continue;
    }
    if (empty()) return nullptr;  // only a lease's bytes are in the way
    drop_oldest();  // the reader is behind
  }
  if (overlaps_pins(at, size)) return nullptr;
  if (wrap && empty()) {
    head_ = 0;  // (empty after a lease's bytes: the record is the front)
  } else if (wrap) {
    end_ = tail_;
    wrapped_ = true;
  }
  // (Only records smaller than the constructor was told fill this ring first.)
  if (count_ >= meta_limit_ && !grow_meta())
    while (count_ >= meta_limit_) drop_oldest();
  tail_ = at + size;
  std::size_t m = meta_head_ + count_;
  if (m >= meta_limit_) m -= meta_limit_;
  meta_[m] = {pid, size};
  ++count_;
  return buf_.get() + at;
}

namespace {

// Pages are faulted in this much at a time: each MADV_POPULATE_WRITE holds
// the process's mmap lock, and an mmap() waiting for it holds up every
// thread that then takes it; MAP_POPULATE would hold it for the whole
// buffer. Where the kernel has no MADV_POPULATE_WRITE
// (before Linux 5.14), each page is touched.
constexpr std::size_t kPopulateChunk = 2u << 20;

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t page_up(std::size_t bytes) { return (bytes + page_size() - 1) / page_size() * page_size(); }

void populate(std::uint8_t* at, std::size_t bytes) {
  for (std::size_t off = 0; off < bytes; off += kPopulateChunk) {
    std::size_t n = std::min(kPopulateChunk, bytes - off);
    if (::madvise(at + off, n, MADV_POPULATE_WRITE) == 0) continue;
    for (std::size_t i = 0; i < n; i += page_size()) static_cast<volatile std::uint8_t*>(at + off)[i] = 0;
  }
}

// The pages of [at, at + bytes) (page-aligned) go back to the system; they
// read as zeros when touched again.
void discard(std::uint8_t* at, std::size_t bytes) { (void)::madvise(at, bytes, MADV_DONTNEED); }

// `bytes` mapped, the first `populated` (rounded up to a page) faulted in.
// Without transparent huge pages: a page fault there would bring in 2 MiB
// where the queue grows by less.
void* map_bytes(std::size_t bytes, std::size_t populated) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  (void)::madvise(p, bytes, MADV_NOHUGEPAGE);
  populate(static_cast<std::uint8_t*>(p), std::min(page_up(populated), page_up(bytes)));
  return p;
}

}  // namespace

void UnmapBytes::operator()(void* p) const { ::munmap(p, bytes); }

RecordQueue::Memory RecordQueue::map_memory(bool populate) const {  // untouched pages cost nothing
  const std::size_t meta_bytes = meta_cap_ * sizeof(Meta);
  Memory m;
  m.buf = decltype(m.buf)(static_cast<std::uint8_t*>(map_bytes(cap_, populate ? first_ : 0)), UnmapBytes{cap_});
  m.meta = decltype(m.meta)(static_cast<Meta*>(map_bytes(meta_bytes, populate ? meta_first_ * sizeof(Meta) : 0)),
                            UnmapBytes{meta_bytes});
  return m;
}

RecordQueue::Memory RecordQueue::prefaulted() const { return map_memory(true); }

void RecordQueue::adopt(Memory&& memory) {
  if (buf_ || !memory.buf || memory.buf.get_deleter().bytes != cap_ ||
      memory.meta.get_deleter().bytes != meta_cap_ * sizeof(Meta))
    return;  // (freed with `memory`)
  buf_ = std::move(memory.buf);
  meta_ = std::move(memory.meta);
  // (A queue with no memory uses its first parts.)
  touched_ = std::min(page_up(limit_), page_up(cap_));
  meta_touched_ = std::min(page_up(meta_limit_ * sizeof(Meta)), page_up(meta_cap_ * sizeof(Meta)));
}

bool RecordQueue::release() {
  if (!empty() || has_dropped() || pinned()) return false;
  buf_.reset();
  meta_.reset();
  head_ = tail_ = end_ = meta_head_ = 0;
  wrapped_ = false;
  limit_ = first_;
  meta_limit_ = meta_first_;
  touched_ = meta_touched_ = peak_ = 0;
  return true;
}

void RecordQueue::fault_in(std::size_t bytes) {
  const std::size_t to = std::min(page_up(bytes), page_up(cap_));
  if (to <= touched_) return;
  populate(buf_.get() + touched_, to - touched_);
  touched_ = to;
}

bool RecordQueue::grow_to(std::size_t bytes) {
  if (limit_ >= cap_ || bytes > cap_) return false;
  const std::size_t to = std::min(cap_, std::max(2 * limit_, bytes));
  fault_in(to);
  limit_ = to;
  return true;
}

bool RecordQueue::grow_wrapped() {
  if (limit_ >= cap_) return false;
  const std::size_t to = std::min(cap_, 2 * std::max(limit_, end_));
  const std::size_t older = end_ - head_, dest = to - older;
  if (to <= end_ || overlaps_pins(dest, older)) return false;
  fault_in(to);
  std::memmove(buf_.get() + dest, buf_.get() + head_, older);
  head_ = dest;
  end_ = to;
  limit_ = to;
  return true;
}

bool RecordQueue::grow_meta() {
  if (meta_limit_ >= meta_cap_) return false;
  const std::size_t to = std::min(meta_cap_, 2 * meta_limit_);
  const std::size_t bytes = std::min(page_up(to * sizeof(Meta)), page_up(meta_cap_ * sizeof(Meta)));
  if (bytes > meta_touched_) {
    populate(reinterpret_cast<std::uint8_t*>(meta_.get()) + meta_touched_, bytes - meta_touched_);
    meta_touched_ = bytes;
  }
  if (meta_head_ + count_ > meta_limit_) {  // gone round its end: the older entries to the new end
    const std::size_t older = meta_limit_ - meta_head_;
    std::memmove(meta_.get() + to - older, meta_.get() + meta_head_, older * sizeof(Meta));
    meta_head_ = to - older;
  }
  meta_limit_ = to;
  return true;
}

void RecordQueue::Unused::give_back() {
  for (Run* r : {&buf_, &meta_})
    if (r->bytes) discard(r->at, std::exchange(r->bytes, 0));
}

RecordQueue::Unused RecordQueue::trim() {
  Unused unused;
  const std::size_t need = std::max(peak_, used_bytes());
  peak_ = used_bytes();
  if (!buf_) return unused;
  std::size_t part = first_;
  while (part < cap_ && part < 2 * need) part *= 2;
  limit_ = std::min({limit_, part, cap_});
  if (empty() && !pinned()) {
    head_ = tail_ = end_ = meta_head_ = 0;
    wrapped_ = false;
  }
  // Past the part in use, the pages no record or leased byte takes.
  std::size_t keep = limit_;
  if (!empty()) keep = std::max(keep, wrapped_ ? end_ : tail_);
  for (int i = 0; i < pins_.n; ++i)
    keep = std::max(keep, static_cast<std::size_t>(pins_.at[i] - buf_.get()) + pins_.bytes[i]);
  keep = page_up(keep);
  if (keep < touched_) {
    unused.buf_ = {buf_.get() + keep, touched_ - keep};
    touched_ = keep;
  }
  // The ring of pids and sizes: its entries moved to its front, then cut to
  // what the part in use holds (in the doublings it grows by).
  std::size_t meta_part = meta_first_;
  while (meta_part < meta_for(limit_)) meta_part *= 2;
  meta_part = std::min(meta_part, meta_cap_);
  if (meta_part < meta_limit_ && count_ <= meta_part) {
    if (meta_head_ + count_ <= meta_limit_)
      std::memmove(meta_.get(), meta_.get() + meta_head_, count_ * sizeof(Meta));
    else
      std::rotate(meta_.get(), meta_.get() + meta_head_, meta_.get() + meta_limit_);
    meta_head_ = 0;
    meta_limit_ = meta_part;
  }
  const std::size_t meta_keep = page_up(meta_limit_ * sizeof(Meta));
  if (meta_keep < meta_touched_) {
    unused.meta_ = {reinterpret_cast<std::uint8_t*>(meta_.get()) + meta_keep, meta_touched_ - meta_keep};
    meta_touched_ = meta_keep;
  }
  return unused;
}

namespace {

// The loss a lost-events record at `rec` reports.
RecordQueue::Dropped lost_of(const std::uint8_t* rec) {
  eventfs_lost l;
  std::memcpy(&l, rec + sizeof(eventfs_record_header), sizeof l);
  return {l.count, (l.flags & EVENTFS_LOST_COUNT_UNKNOWN) != 0};
}

std::uint32_t id_of(const std::uint8_t* rec) {
  eventfs_record_header h;
  std::memcpy(&h, rec, sizeof h);
  return h.id;
}

}  // namespace

bool RecordQueue::try_push(std::int32_t pid, const std::uint8_t* rec) {
  eventfs_record_header h;
  std::memcpy(&h, rec, sizeof h);
  if (h.id == EVENTFS_ID_LOST) {
    const Dropped l = lost_of(rec);
    add_lost(h.timestamp, l.count, l.unknown);
  } else if (std::uint8_t* p = reserve(pid, h.size, h.timestamp)) {
    std::memcpy(p, rec, h.size);
  } else {
    return false;
  }
  return true;
}

bool RecordQueue::append(RecordQueue& from, Until until) {
  for (;;) {
    if (from.has_dropped()) gap_at_back(from.take_dropped());  // (the last pop() leaves its gap at the back there)
    if (from.empty()) break;
    if (!try_push(from.front_pid(), from.front())) {
      if (until == Until::Lease) return false;
      drop_record();
    }
    from.pop();
  }
  dropped_total_ += from.dropped_total_;  // (what `from` dropped is reported here)
  from.dropped_total_ = 0;
  return true;
}

void RecordQueue::add_lost(std::uint64_t ts, std::uint64_t count, bool unknown) {
  // (After a lost-events record, or with no room: it joins the gap at the back.)
  const Dropped loss{count, unknown};
  if (back_lost() || !place_lost(ts, loss)) gap_at_back(loss);
}

bool RecordQueue::place_lost(std::uint64_t ts, Dropped gap) {
  std::uint8_t* at = place(0, lost_record_size());
  if (!at) return false;
  // (Dropping the oldest to make room may have emptied the queue: the gap
  // at the back is then the one at the front, and this record the front.)
  if (count_ == 1) gap.add(take_dropped());
  gap.add(back_gap_);
  back_gap_ = {};
  write_lost_record(ts, gap.count, cpu_, gap.unknown, at);
  return true;
}

void RecordQueue::gap_at_back(const Dropped& gap) {
  if (empty()) {
    unreported_.add(gap);
  } else if (std::uint8_t* back = back_lost()) {
    eventfs_lost l;
    std::memcpy(&l, back + sizeof(eventfs_record_header), sizeof l);
    l.count += gap.count;
    if (gap.unknown) l.flags |= EVENTFS_LOST_COUNT_UNKNOWN;
    std::memcpy(back + sizeof(eventfs_record_header), &l, sizeof l);
  } else {
    back_gap_.add(gap);
  }
}

void RecordQueue::drop_record() {
  ++dropped_total_;
  gap_at_back({1, false});
}

std::uint8_t* RecordQueue::back_lost() {
  if (empty()) return nullptr;
  std::size_t m = meta_head_ + count_ - 1;
  if (m >= meta_limit_) m -= meta_limit_;
  std::uint8_t* back = buf_.get() + tail_ - meta_[m].size;
  return id_of(back) == EVENTFS_ID_LOST ? back : nullptr;
}

RecordQueue::Dropped RecordQueue::take_gap(std::uint64_t& ts) {
  Dropped d = take_dropped();
  ts = 0;
  if (!d.any() || empty()) return d;
  if (id_of(front()) == EVENTFS_ID_LOST) {
    d.add(lost_of(front()));
    ts = front_ts();
    pop();
    d.add(take_dropped());  // (the gap at the back, if that emptied the queue)
  }
  if (!empty()) ts = front_ts();
  return d;
}

void RecordQueue::drop_framed(const std::uint8_t* rec) {
  if (id_of(rec) == EVENTFS_ID_LOST) {  // keep the kernel's count: it goes into the next report
    unreported_.add(lost_of(rec));
  } else {
    ++unreported_.count;
    ++dropped_total_;
  }
}

void RecordQueue::drop_oldest() {
  drop_framed(front());
  pop();
}

bool RecordQueue::overlaps_pins(std::size_t at, std::size_t size) const {
  for (int i = 0; i < pins_.n; ++i) {
    const std::size_t begin = static_cast<std::size_t>(pins_.at[i] - buf_.get());
    if (at < begin + pins_.bytes[i] && begin < at + size) return true;
  }
  return false;
}

RecordQueue::Runs RecordQueue::lease(std::size_t max_bytes) {
  if (pinned()) return {};
  Runs r = front_runs(max_bytes, false);
  pop_front(r);
  pins_ = r;
  return r;
}

void RecordQueue::unpin() { pins_ = {}; }

std::size_t RecordQueue::free_bytes() const {
  if (empty()) return cap_;
  if (wrapped_) return head_ - tail_;
  return std::max(cap_ - tail_, head_);
}

std::uint64_t RecordQueue::front_ts() const {
  eventfs_record_header h;
  std::memcpy(&h, front(), sizeof h);
  return h.timestamp;
}

void RecordQueue::popped(std::size_t records, std::size_t bytes) {
  peak_ = std::max(peak_, used_bytes());  // (the most a queue holds is what it held before a pop, or holds now)
  head_ += bytes;
  count_ -= records;
  meta_head_ += records;  // records <= count_ <= meta_limit_
  if (meta_head_ >= meta_limit_) meta_head_ -= meta_limit_;
  if (wrapped_ && head_ == end_) {
    head_ = 0;
    wrapped_ = false;
  }
}

void RecordQueue::pop() { popped(1, front_size()); }

RecordQueue::Runs RecordQueue::front_runs(std::size_t max_bytes, bool at_least_one) const {
  Runs r;
  std::size_t head = head_, m = meta_head_, taken_bytes = 0, taken = 0;
  bool wrapped = wrapped_;
  while (!empty() && r.n < 2) {
    // The records from `head` up to the end of the contiguous run.
    const std::size_t run_end = wrapped ? end_ : tail_;
    std::size_t at = head, records = 0;
    bool full = false;
    while (at < run_end) {
      std::uint32_t size = meta_[m].size;
      if (taken_bytes + (at - head) + size > max_bytes && !(at_least_one && taken == 0 && records == 0)) {
        full = true;
        break;
      }
      if (++m == meta_limit_) m = 0;
      at += size;
      ++records;
    }
    if (records == 0) break;
    r.at[r.n] = buf_.get() + head;
    r.bytes[r.n] = at - head;
    r.records[r.n] = records;
    ++r.n;
    taken += records;
    taken_bytes += at - head;
    if (full || !wrapped) break;
    head = 0;  // the run ended where the buffer's records go on at the front
    wrapped = false;
  }
  return r;
}

void RecordQueue::pop_front(const Runs& runs) {
  for (int i = 0; i < runs.n; ++i) popped(runs.records[i], runs.bytes[i]);
}

std::size_t RecordQueue::take_into(std::string& out, std::size_t max_bytes, bool at_least_one) {
  Runs r = front_runs(max_bytes, at_least_one);
  std::size_t taken = 0;
  for (int i = 0; i < r.n; ++i) {
    out.append(reinterpret_cast<const char*>(r.at[i]), r.bytes[i]);
    taken += r.records[i];
  }
  pop_front(r);
  return taken;
}

}  // namespace eventfs
