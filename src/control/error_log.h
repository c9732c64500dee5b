// error_log: why the last writes were refused, in tracefs's own layout:
//
//   [  872.414136] sched_switch/trigger: error: Unknown command 'foo'
//     Command: foo:1
//              ^
#pragma once

#include <deque>
#include <mutex>
#include <string>

namespace eventfs {

class ErrorLog {
 public:
  static constexpr std::size_t kMaxEntries = 16;  // as the kernel keeps

  void add(const std::string& location, const std::string& message, const std::string& command,
           std::size_t caret);
  std::string text() const;
  void clear();

  // Parses the newest entry of a kernel error_log: message and caret offset
  // into its command. False if the log is empty.
  static bool parse_last(const std::string& kernel_log, std::string& message, std::string& command,
                         std::size_t& caret);

 private:
  mutable std::mutex mu_;
  std::deque<std::string> entries_;
};

}  // namespace eventfs
