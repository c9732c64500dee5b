// A per-CPU FIFO of projected records (the include/eventfs/record.h framing),
// each with the common_pid the text stream shows. Bounded: when a reader
// falls behind, the oldest records go and the next reader is told how many
// (a lost-events record at the place of the gap). One contiguous byte
// buffer: nothing is allocated per record.
#pragma once

#include <cstdint>
#include <vector>

namespace eventfs {

class RecordQueue {
 public:
  explicit RecordQueue(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Appends one framed record (header.size bytes at `rec`).
  void push(std::int32_t pid, const std::uint8_t* rec);

  bool empty() const { return head_ == tail_; }
  // The oldest record (its framing) and its pid; only when !empty().
  const std::uint8_t* front() const { return buf_.data() + head_ + kPrefix; }
  std::int32_t front_pid() const;
  std::uint32_t front_size() const;
  std::uint64_t front_ts() const;
  void pop();

  // Events dropped because the queue was full, not yet reported: the
  // records, plus the counts of the kernel's lost-events records among them
  // (`unknown` if one of those had no exact count).
  struct Dropped {
    std::uint64_t count = 0;
    bool unknown = false;
  };
  Dropped take_dropped() {
    Dropped d = unreported_;
    unreported_ = {};
    return d;
  }
  // Records (not lost-events records) dropped so far.
  std::uint64_t dropped_total() const { return dropped_total_; }
  std::uint64_t count() const { return count_; }
  std::size_t bytes() const { return tail_ - head_; }

 private:
  static constexpr std::size_t kPrefix = 8;  // pid, padding
  std::vector<std::uint8_t> buf_;
  std::size_t head_ = 0, tail_ = 0;
  std::size_t max_bytes_;
  std::uint64_t count_ = 0, dropped_total_ = 0;
  Dropped unreported_;
};

}  // namespace eventfs
