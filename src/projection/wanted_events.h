// Which stable events the record streams carry. A raw record is projected
// into a stable event only if that event is wanted: its enable file reads 1,
// or a trigger holds it armed (0*/1*), or the kernel records it always
// (ftrace:print). A raw event enabled for another reason -- another stable
// event over the same raw event, or raw/<system>/<event>/enable -- does not
// make a stable event appear in the streams. A stable event whose raw event
// nobody has enabled stays wanted: the records still in the kernel's ring
// were made while it was on, and a stream opened after the disable still
// shows them, as tracefs's trace_pipe does.
//
// The controller writes the flags after every enable and trigger write; the
// stream producer reads them per record. Indexed like Resolution::available.
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

namespace eventfs {

// The flags, and the object itself, have cache lines of their own: each
// record reads them, on every CPU, and a line shared with data that some
// thread writes would be fetched again and again.
class alignas(64) WantedEvents {
 public:
  explicit WantedEvents(std::size_t count) : lines_((count + kPerLine - 1) / kPerLine), count_(count) {}

  void set(std::size_t index, bool wanted) {
    if (index < count_) lines_[index / kPerLine].flag[index % kPerLine].store(wanted, std::memory_order_relaxed);
  }
  bool wanted(std::size_t index) const {
    return index < count_ && lines_[index / kPerLine].flag[index % kPerLine].load(std::memory_order_relaxed);
  }
  std::size_t size() const { return count_; }

 private:
  static constexpr std::size_t kPerLine = 64;
  struct alignas(64) Line {
    std::atomic<bool> flag[kPerLine] = {};
  };
  std::vector<Line> lines_;
  std::size_t count_;
};

}  // namespace eventfs
