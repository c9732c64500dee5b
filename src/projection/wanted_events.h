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

class WantedEvents {
 public:
  explicit WantedEvents(std::size_t count) : flags_(count) {}

  void set(std::size_t index, bool wanted) {
    if (index < flags_.size()) flags_[index].store(wanted, std::memory_order_relaxed);
  }
  bool wanted(std::size_t index) const {
    return index < flags_.size() && flags_[index].load(std::memory_order_relaxed);
  }
  std::size_t size() const { return flags_.size(); }

 private:
  std::vector<std::atomic<bool>> flags_;
};

}  // namespace eventfs
