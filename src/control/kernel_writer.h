// The controller's writes to the kernel's control files of eventfs's
// instance: one at a time, in the order they come, and for a refused one the
// kernel's own error_log entry (the reason, and the caret into the text).
#pragma once

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "error/result.h"
#include "tracefs/instance.h"

namespace eventfs {

// A kernel write the kernel refused: its errno, and one line of why: the
// kernel's error_log entry for it (`logged`, with the caret into the text
// written), or the errno's description.
struct KernelRefusal {
  int code = EIO;
  std::string reason;
  bool logged = false;
  std::size_t caret = 0;

  // Not logged: the errno's description.
  static KernelRefusal of(int code);
};
using KernelStatus = Result<void, KernelRefusal>;

class KernelWriter {
 public:
  explicit KernelWriter(const InstanceFiles& files) : files_(files) {}

  // One kernel write; when it is refused and `read_log`, the kernel's
  // error_log entry for it (writes are one at a time, so the entry found is
  // this write's), and error_log is emptied again.
  KernelStatus write(const std::string& rel, std::string_view data, bool read_log = true);
  // Puts back what a refused write's earlier steps changed: nothing more can
  // be done if the kernel refuses this too, and its error_log is left alone.
  void put_back(const std::string& rel, std::string_view data) { (void)write(rel, data, false); }

 private:
  // A mutex taken in arrival order: a long glob's writes take turns with
  // other events' writes.
  class FifoMutex {
   public:
    void lock();
    void unlock();

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    unsigned long next_ = 0, serving_ = 0;
  };

  const InstanceFiles& files_;
  FifoMutex turn_;
};

}  // namespace eventfs
