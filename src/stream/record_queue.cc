#include "stream/record_queue.h"

#include <cstring>

#include <eventfs/record.h>

namespace eventfs {

void RecordQueue::push(std::int32_t pid, const std::uint8_t* rec) {
  eventfs_record_header h;
  std::memcpy(&h, rec, sizeof h);
  std::size_t need = kPrefix + h.size;
  while (!empty() && bytes() + need > max_bytes_) {  // the reader is behind: drop the oldest
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
  if (tail_ + need > buf_.size()) {
    if (head_ > 0) {  // slide the live part to the front
      std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
    }
    if (tail_ + need > buf_.size()) buf_.resize(std::max(buf_.size() * 2, tail_ + need));
  }
  std::memcpy(buf_.data() + tail_, &pid, sizeof pid);
  std::memset(buf_.data() + tail_ + sizeof pid, 0, kPrefix - sizeof pid);
  std::memcpy(buf_.data() + tail_ + kPrefix, rec, h.size);
  tail_ += need;
  ++count_;
}

std::int32_t RecordQueue::front_pid() const {
  std::int32_t pid;
  std::memcpy(&pid, buf_.data() + head_, sizeof pid);
  return pid;
}

std::uint32_t RecordQueue::front_size() const {
  eventfs_record_header h;
  std::memcpy(&h, front(), sizeof h);
  return h.size;
}

std::uint64_t RecordQueue::front_ts() const {
  eventfs_record_header h;
  std::memcpy(&h, front(), sizeof h);
  return h.timestamp;
}

void RecordQueue::pop() {
  head_ += kPrefix + front_size();
  --count_;
  if (head_ == tail_) head_ = tail_ = 0;
}

}  // namespace eventfs
