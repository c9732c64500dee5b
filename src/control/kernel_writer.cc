#include "control/kernel_writer.h"

#include <cstring>

#include "control/error_log.h"

namespace eventfs {

KernelRefusal KernelRefusal::of(int code) { return KernelRefusal{code, std::strerror(code)}; }

KernelStatus KernelWriter::write(const std::string& rel, std::string_view data, bool read_log) {
  std::lock_guard lock(turn_);
  const int e = files_.write(rel, data).code();
  if (!e) return {};
  KernelRefusal why = KernelRefusal::of(e);
  if (!read_log) return why;
  std::string message, command;
  auto klog = files_.read("error_log");
  if (klog && ErrorLog::parse_last(*klog, message, command, why.caret)) {
    why.reason = std::move(message);
    why.logged = true;
    (void)files_.truncate("error_log");
  }
  return why;
}

void KernelWriter::FifoMutex::lock() {
  std::unique_lock lock(mu_);
  const unsigned long ticket = next_++;
  cv_.wait(lock, [&] { return serving_ == ticket; });
}

void KernelWriter::FifoMutex::unlock() {
  {
    std::lock_guard lock(mu_);
    ++serving_;
  }
  cv_.notify_all();
}

}  // namespace eventfs
