#include "stream/record_queue.h"

#include <algorithm>
#include <cstring>

#include <eventfs/record.h>

namespace eventfs {

std::uint8_t* RecordQueue::reserve(std::int32_t pid, std::uint32_t size) {
  std::size_t need = kPrefix + size;
  if (need > cap_) return nullptr;
  if (!buf_) buf_.reset(new std::uint8_t[cap_]);  // uninitialized: untouched pages cost nothing
  std::size_t at;
  for (;;) {
    if (empty()) {
      head_ = tail_ = end_ = 0;
      wrapped_ = false;
    }
    if (!wrapped_) {
      if (cap_ - tail_ >= need) {
        at = tail_;
        break;
      }
      if (head_ >= need) {  // start again at the front
        end_ = tail_;
        wrapped_ = true;
        at = 0;
        break;
      }
    } else if (head_ - tail_ >= need) {
      at = tail_;
      break;
    }
    drop_oldest();  // the reader is behind
  }
  tail_ = at + need;
  std::uint32_t prefix[2] = {static_cast<std::uint32_t>(pid), static_cast<std::uint32_t>(need)};
  std::memcpy(buf_.get() + at, prefix, kPrefix);
  ++count_;
  return buf_.get() + at + kPrefix;
}

void RecordQueue::push(std::int32_t pid, const std::uint8_t* rec) {
  eventfs_record_header h;
  std::memcpy(&h, rec, sizeof h);
  if (std::uint8_t* p = reserve(pid, h.size)) std::memcpy(p, rec, h.size);
}

void RecordQueue::drop_oldest() {
  eventfs_record_header old;
  std::memcpy(&old, front(), sizeof old);
  if (old.id == EVENTFS_ID_LOST) {  // keep the kernel's count: it goes into the next report
    eventfs_lost l;
    std::memcpy(&l, front() + sizeof old, sizeof l);
    unreported_.count += l.count;
    unreported_.unknown |= (l.flags & EVENTFS_LOST_COUNT_UNKNOWN) != 0;
  } else {
    ++unreported_.count;
    ++dropped_total_;
  }
  pop();
}

std::size_t RecordQueue::free_bytes() const {
  if (empty()) return cap_;
  if (wrapped_) return head_ - tail_;
  return std::max(cap_ - tail_, head_);
}

std::int32_t RecordQueue::front_pid() const {
  std::int32_t pid;
  std::memcpy(&pid, buf_.get() + head_, sizeof pid);
  return pid;
}

std::uint32_t RecordQueue::front_size() const {
  std::uint32_t entry;
  std::memcpy(&entry, buf_.get() + head_ + 4, sizeof entry);
  return entry - static_cast<std::uint32_t>(kPrefix);
}

std::uint64_t RecordQueue::front_ts() const {
  eventfs_record_header h;
  std::memcpy(&h, front(), sizeof h);
  return h.timestamp;
}

void RecordQueue::pop() {
  head_ += kPrefix + front_size();
  --count_;
  if (wrapped_ && head_ == end_) {
    head_ = 0;
    wrapped_ = false;
  }
}

}  // namespace eventfs
